"""The served ``Manager().Array()`` behaves like a real manager's: hypothesis-generated sequences of its proxy's
operations (len, item and slice reads and writes, wrong types, iteration, str) on a real
``multiprocessing.Manager()`` and under racecheck (served), in the parent and inside one child; the outcomes
(results, and exception types) must be equal op for op. A planted mistake must fail the comparison."""

import array
import multiprocessing

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from manager_compare import compare_to_real
from racecheck.control.processes.manager_array import ManagedArray

SETTINGS = settings(max_examples=40, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
CHILD_SETTINGS = settings(SETTINGS, max_examples=5)
INDEX = st.integers(-4, 4)
OPS = st.lists(st.one_of(
    st.just(("len",)), st.just(("str",)), st.just(("iter",)),
    st.tuples(st.just("get"), INDEX), st.tuples(st.just("set"), INDEX, st.integers(-9, 9)),
    st.tuples(st.just("set_text"), INDEX),
    st.tuples(st.sampled_from(["slice", "slice_set", "slice_set_list", "slice_set_short"]), INDEX, INDEX),
), max_size=8)


def _do(items, op):
    name, *args = op
    if name == "len":
        return len(items)
    if name == "str":
        return str(items)
    if name == "iter":
        return list(items)
    if name == "get":
        return items[args[0]]
    if name == "set":
        items[args[0]] = args[1]
        return None
    if name == "set_text":
        items[args[0]] = "x"
        return None
    part = slice(args[0], args[1])
    if name == "slice":
        return items[part].tolist()
    size = len(range(*part.indices(3)))  # as if of 3 items (a longer slice grows it, on both sides alike)
    if name == "slice_set":
        items[part] = array.array("i", [7] * size)
    elif name == "slice_set_list":
        items[part] = [7] * size
    else:
        items[part] = array.array("i", [7] * (size + 1))
    return None


def _outcomes(items, ops):
    out = []
    for op in ops:
        try:
            out.append(("ok", _do(items, op)))
        except BaseException as exc:  # noqa: BLE001 - the exception type is the outcome
            out.append(("raise", type(exc).__name__))
    return out


def in_parent(ops, sink, manager=None):
    if manager is not None:
        sink.append(_outcomes(manager.Array("i", [1, 2, 3]), ops))
        return
    with multiprocessing.get_context("fork").Manager() as served:
        sink.append(_outcomes(served.Array("i", [1, 2, 3]), ops))


def _child(items, ops, report):
    report.put(_outcomes(items, ops))


def in_child(ops, sink, manager=None):
    ctx = multiprocessing.get_context("fork")
    used = manager if manager is not None else ctx.Manager()
    items, report = used.Array("i", [1, 2, 3]), ctx.Queue()
    child = ctx.Process(target=_child, args=(items, ops, report))
    child.start()
    sink.append(report.get())
    child.join()


@SETTINGS
@given(ops=OPS)
def test_a_served_managers_array_matches_a_real_one_in_the_parent(real_manager, ops):
    compare_to_real(in_parent, ops, real_manager)


@CHILD_SETTINGS
@given(ops=OPS)
def test_a_served_managers_array_matches_a_real_one_in_a_child(real_manager, ops):
    compare_to_real(in_child, ops, real_manager)


def test_a_planted_wrong_array_fails_the_comparison(real_manager, monkeypatch):
    """An array whose ``len`` counts one too many: the comparison must find it."""
    real_len = ManagedArray.__len__
    monkeypatch.setattr(ManagedArray, "__len__", lambda self: real_len(self) + 1)

    @settings(SETTINGS, max_examples=100, phases=[Phase.generate])
    @given(OPS)
    def compared(ops):
        compare_to_real(in_parent, ops, real_manager)

    with pytest.raises(AssertionError):
        compared()
