"""A child process's failure, relayed by its parent's waiting code at one fixed line, is told apart by where the child
raised it: two different failures of the children are two signatures (a swap that changes which rank fails is not
"still fails the same way"), the same failure one."""

from __future__ import annotations

import concurrent.futures
import multiprocessing

import pytest
from racecheck.runtime.records import FailureInfo

FORK = multiprocessing.get_context("fork")


def first_check(_n=0):
    assert False, "first"  # noqa: B011 (a real failure at this line)


def second_check(_n=0):
    raise KeyError("second")


def _signature(exc: BaseException) -> tuple:
    return FailureInfo("exception", exc, 0).signature()


def _from_executor(fn) -> BaseException:
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=FORK) as pool:
        with pytest.raises(BaseException) as caught:
            pool.submit(fn).result()
    return caught.value


def _from_pool(fn) -> BaseException:
    with FORK.Pool(1) as pool:
        with pytest.raises(BaseException) as caught:
            pool.apply(fn)
    return caught.value


def _from_torch_spawn(fn) -> BaseException:
    tmp = pytest.importorskip("torch.multiprocessing")
    with pytest.raises(BaseException) as caught:
        tmp.start_processes(fn, nprocs=1, join=True, start_method="fork")
    return caught.value


@pytest.mark.parametrize("relay", [_from_executor, _from_pool, _from_torch_spawn])
def test_where_the_child_raised_is_part_of_the_signature(relay):
    first, again, second = relay(first_check), relay(first_check), relay(second_check)
    assert _signature(first) == _signature(again)
    assert _signature(first) != _signature(second)
    kind, _type, where = _signature(first)
    assert kind == "exception" and where.endswith(f"AssertionError at {__name__.split('.')[-1]}.py:"
                                                  f"{first_check.__code__.co_firstlineno + 1}"), where


def test_an_exception_raised_here_keeps_its_plain_signature():
    try:
        first_check()
    except AssertionError as exc:
        kind, name, where = _signature(exc)
    assert (kind, name) == ("exception", "AssertionError")
    assert where == f"{__name__.split('.')[-1]}.py:{first_check.__code__.co_firstlineno + 1}"


def test_a_message_is_read_without_running_the_exceptions_own_code():
    class Loud(Exception):
        def __str__(self):
            raise AssertionError("racecheck ran the program's __str__")

    text = 'Traceback (most recent call last):\n  File "/elsewhere/child.py", line 7, in f\n    g()\nValueError: x\n'
    exc = Loud(text)
    exc.__cause__ = Loud(text)
    assert _signature(exc)[2] == " <- ValueError at child.py:7"
