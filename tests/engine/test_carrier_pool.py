"""Controlled threads run on reused carriers (``racecheck.runtime.carrier_pool``) and must look like fresh OS threads.

Differential: a hypothesis-generated program whose threads look at themselves (identity, thread-locals, context
variables, trace and profile functions) and then leave something behind (a thread-local value, a context
variable, a trace function of their own) runs once with plain threads and over several schedules under racecheck,
so later threads land on carriers earlier threads used; every thread must see what a fresh thread sees. Besides:
the carriers are reused (same OS thread id across schedules) unless ``fresh_threads=True``, none outlives its
exploration, and what a reused thread cannot be given fresh (C-level thread-locals) is what ``fresh_threads`` is for.
"""

from __future__ import annotations

import _thread
import contextvars
import functools
import sys
import threading

import pytest
import racecheck
from engine_threads import racecheck_threads
from hypothesis import given, settings
from hypothesis import strategies as st
from racecheck.runtime import carrier_pool

# The subject here is reused carriers, not memory:
# explored with memory=False (memory watching adds a warm-up run and steps of its own).
_explore = functools.partial(racecheck.explore, memory=False)

pytestmark = pytest.mark.skipif(not carrier_pool.supported(), reason="no carrier reuse on this interpreter")

REAL = {"native_id": _thread.get_native_id}  # out of reach of the run's virtual ids

LOCAL = threading.local()
VAR: contextvars.ContextVar[str] = contextvars.ContextVar("racecheck_pool_var")


def _stray_trace(frame, event, arg):  # a trace function a thread sets for itself and never removes
    return None


def _look(seen: dict, name: str, leave: tuple[str, ...]) -> None:
    me = threading.current_thread()
    seen[name] = (
        me.name,
        me in threading.enumerate(),
        me.is_alive(),
        hasattr(LOCAL, "value"),
        VAR.get("unset"),
        sys.gettrace() is threading.gettrace(),
        sys.getprofile() is None,
        contextvars.copy_context().get(VAR, "unset"),
    )
    if "local" in leave:
        LOCAL.value = name
    if "var" in leave:
        VAR.set(name)
    if "trace" in leave:
        sys.settrace(_stray_trace)


def _program(shape: list[tuple[int, tuple[str, ...]]], seen: dict) -> None:
    """Threads started in waves: each wave's threads run (and leave their state behind) before the next starts."""
    for wave, (count, leave) in enumerate(shape):
        threads = [
            threading.Thread(target=_look, args=(seen, f"w{wave}t{i}", leave), name=f"w{wave}t{i}")
            for i in range(count)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        seen[f"w{wave}:after"] = [(t.is_alive(), t.ident is not None) for t in threads]


LEAVE = st.lists(st.sampled_from(["local", "var", "trace"]), unique=True).map(tuple)
SHAPES = st.lists(st.tuples(st.integers(1, 3), LEAVE), min_size=1, max_size=3)


@settings(max_examples=25, deadline=None)
@given(shape=SHAPES)
def test_a_thread_on_a_reused_carrier_sees_what_a_fresh_thread_sees(shape):
    expected: dict = {}
    _program(shape, expected)
    runs: list[dict] = []

    def under_control() -> None:
        seen: dict = {}
        runs.append(seen)
        _program(shape, seen)

    result = _explore(under_control, strategy="random", schedules=4, seed=1, skip_duplicates=False)
    assert result.ok, result.failure
    assert len(runs) == 4
    for seen in runs:
        assert seen == expected
    assert racecheck_threads() == []


def _worker_native_ids(**options) -> list[int]:
    ids: list[int] = []

    def fn() -> None:
        t = threading.Thread(target=lambda: ids.append(REAL["native_id"]()))
        t.start()
        t.join()

    assert _explore(fn, schedules=3, skip_duplicates=False, **options).ok
    return ids


def test_the_worker_runs_on_one_carrier_across_schedules_and_on_fresh_threads_if_asked():
    reused = _worker_native_ids()
    assert len(reused) == 3 and len(set(reused)) == 1
    fresh = _worker_native_ids(fresh_threads=True)
    assert len(fresh) == 3 and len(set(fresh)) == 3  # Linux thread ids are not handed out again at once


def test_seen_from_outside_a_finished_thread_is_joined_and_dead():
    threads: list[threading.Thread] = []

    def fn() -> None:
        t = threading.Thread(target=lambda: None)
        threads.append(t)
        t.start()
        t.join()

    assert _explore(fn, schedules=3, skip_duplicates=False).ok
    for t in threads:
        assert not t.is_alive()
        t.join(timeout=0)  # returns at once, as for any thread that ended
        assert t.ident is not None and t.native_id is not None


def test_a_thread_started_twice_is_refused_as_the_stdlib_refuses_it():
    errors: list[str] = []

    def fn() -> None:
        t = threading.Thread(target=lambda: None)
        t.start()
        try:
            t.start()
        except RuntimeError as exc:
            errors.append(str(exc))
        t.join()

    assert _explore(fn, schedules=2, skip_duplicates=False).ok
    plain = threading.Thread(target=lambda: None)
    plain.start()
    with pytest.raises(RuntimeError) as real:
        plain.start()
    plain.join()
    assert errors == [str(real.value)] * 2


def test_no_carrier_outlives_a_failing_exploration():
    def fn() -> None:
        box = []
        t = threading.Thread(target=lambda: box.append(1))
        t.start()
        assert box == [1], "the worker has not run yet"
        t.join()

    result = _explore(fn, strategy="dfs", schedules=20)
    assert not result.ok
    assert racecheck_threads() == []


def test_c_level_thread_state_is_what_fresh_threads_is_for():
    """torch keeps grad mode in a C++ thread-local: a worker that switches it off by a call (not a context manager)
    leaves it off for the next thread on the same carrier; with ``fresh_threads=True`` every thread starts with it on,
    as a new OS thread does."""
    torch = pytest.importorskip("torch")
    modes: list[bool] = []

    def fn() -> None:
        def worker() -> None:
            modes.append(torch.is_grad_enabled())
            torch.set_grad_enabled(False)

        t = threading.Thread(target=worker)
        t.start()
        t.join()

    assert _explore(fn, schedules=3, skip_duplicates=False, fresh_threads=True).ok
    assert modes == [True, True, True]
    modes.clear()
    assert _explore(fn, schedules=3, skip_duplicates=False).ok
    assert modes == [True, False, False]  # the documented limit of reuse


def test_fresh_threads_must_be_a_bool():
    with pytest.raises(TypeError, match="fresh_threads must be True or False"):
        racecheck.Config(fresh_threads="yes")


def test_a_thread_started_after_threading_settrace_gets_that_function_as_a_new_thread_does():
    seen: list[bool] = []

    def fn() -> None:
        first = threading.Thread(target=lambda: None)  # its carrier exists before the hook does
        first.start()
        first.join()
        threading.settrace(_stray_trace)
        try:
            t = threading.Thread(target=lambda: seen.append(sys.gettrace() is _stray_trace))
            t.start()
            t.join()
        finally:
            threading.settrace(None)

    fn()
    assert seen == [True]  # plain threads
    seen.clear()
    assert _explore(fn, schedules=3, skip_duplicates=False).ok
    assert seen == [True, True, True]
