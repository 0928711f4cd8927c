"""The served Manager proxies behave like a real Manager's: hypothesis-generated sequences of operations on a
manager's dict, list, Value, Namespace, Queue, Lock, RLock, BoundedSemaphore and Event, run on a real
``multiprocessing.Manager()`` and under racecheck (where ``Manager()`` is served, with no server process), in the
parent and inside one child; the outcomes (results and exception types) must be equal, op for op. A model with a
planted mistake must fail the same comparison.

Waits that would find nothing use a short real timeout (virtual under racecheck)."""

import multiprocessing

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from manager_compare import compare_to_real
from racecheck.control.processes.manager_data import ManagedList

SETTINGS = settings(max_examples=60, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
CHILD_SETTINGS = settings(SETTINGS, max_examples=6)

KEYS = st.sampled_from(["a", "b", 3])
VALUES = st.one_of(st.integers(-2, 2), st.lists(st.integers(0, 1), max_size=2))
OPS = st.lists(st.one_of(
    st.tuples(st.sampled_from(["d.set", "d.setdefault", "d.update"]), KEYS, VALUES),
    st.tuples(st.sampled_from(["d.get", "d.get_default", "d.del", "d.pop", "d.pop_default", "d.contains",
                               "d.append_to"]), KEYS),
    st.sampled_from([("d.len",), ("d.keys",), ("d.items",), ("d.values",), ("d.copy",), ("d.popitem",),
                     ("d.clear",), ("d.iter",), ("d.str",)]),
    st.tuples(st.sampled_from(["l.append", "l.remove", "l.index", "l.count", "l.contains"]), VALUES),
    st.tuples(st.sampled_from(["l.get", "l.del", "l.pop_at"]), st.integers(-3, 3)),
    st.tuples(st.sampled_from(["l.set", "l.insert"]), st.integers(-3, 3), VALUES),
    st.sampled_from([("l.pop",), ("l.len",), ("l.list",), ("l.slice",), ("l.reverse",), ("l.extend",),
                     ("l.iadd",)]),
    st.tuples(st.just("v.set"), VALUES), st.just(("v.get",)),
    st.tuples(st.sampled_from(["ns.set"]), st.sampled_from(["x", "y"]), VALUES),
    st.tuples(st.sampled_from(["ns.get", "ns.del"]), st.sampled_from(["x", "y"])),
    st.tuples(st.just("q.put"), VALUES),
    st.sampled_from([("q.get",), ("q.get_nowait",), ("q.qsize",), ("q.empty",)]),
    st.sampled_from([("lock.try",), ("lock.timed",), ("lock.release",), ("rlock.try",), ("rlock.release",),
                     ("sem.try",), ("sem.release",)]),
    st.sampled_from([("e.set",), ("e.clear",), ("e.is_set",), ("e.wait",)]),
), max_size=10)


def _dict_op(d, name, args):
    if name == "d.set":
        d[args[0]] = args[1]
        return None
    if name == "d.setdefault":
        return d.setdefault(args[0], args[1])
    if name == "d.update":
        return d.update({args[0]: args[1]})
    if name == "d.get":
        return d[args[0]]
    if name == "d.get_default":
        return d.get(args[0], "none")
    if name == "d.del":
        del d[args[0]]
        return None
    if name == "d.pop":
        return d.pop(args[0])
    if name == "d.pop_default":
        return d.pop(args[0], "none")
    if name == "d.contains":
        return args[0] in d
    if name == "d.append_to":  # a value read from the proxy is a copy: appending to it changes nothing there
        value = d.get(args[0], [])
        if isinstance(value, list):
            value.append(9)
        return d.get(args[0], "none")
    if name == "d.iter":
        return [key for key in d]
    if name == "d.str":
        return str(d)
    return {"d.len": len, "d.keys": lambda x: list(x.keys()), "d.items": lambda x: list(x.items()),
            "d.values": lambda x: list(x.values()), "d.copy": lambda x: x.copy(), "d.popitem": lambda x: x.popitem(),
            "d.clear": lambda x: x.clear()}[name](d)


def _list_op(lst, name, args):
    if name == "l.append":
        return lst.append(args[0])
    if name in ("l.remove", "l.index", "l.count"):
        return getattr(lst, name[2:])(args[0])
    if name == "l.contains":
        return args[0] in lst
    if name == "l.get":
        return lst[args[0]]
    if name == "l.del":
        del lst[args[0]]
        return None
    if name == "l.pop_at":
        return lst.pop(args[0])
    if name == "l.set":
        lst[args[0]] = args[1]
        return None
    if name == "l.insert":
        return lst.insert(args[0], args[1])
    if name == "l.pop":
        return lst.pop()
    if name == "l.len":
        return len(lst)
    if name == "l.list":
        return list(lst)
    if name == "l.slice":
        return lst[0:2]
    if name == "l.reverse":
        return lst.reverse()
    if name == "l.extend":
        return lst.extend([5, 6])
    lst += [7]
    return None


def _do(objects, op):
    d, lst, v, ns, q, lock, rlock, sem, event = objects
    name, *args = op
    if name.startswith("d."):
        return _dict_op(d, name, args)
    if name.startswith("l."):
        return _list_op(lst, name, args)
    if name == "v.set":
        v.value = args[0]
        return None
    if name == "v.get":
        return v.value
    if name == "ns.set":
        setattr(ns, args[0], args[1])
        return None
    if name == "ns.get":
        return getattr(ns, args[0])
    if name == "ns.del":
        return delattr(ns, args[0])
    if name == "q.put":
        return q.put(args[0])
    if name == "q.get":
        return q.get(timeout=0.01)
    if name == "q.get_nowait":
        return q.get_nowait()
    if name in ("q.qsize", "q.empty"):
        return getattr(q, name[2:])()
    if name in ("lock.try", "rlock.try", "sem.try"):
        return {"lock.try": lock, "rlock.try": rlock, "sem.try": sem}[name].acquire(False)
    if name == "lock.timed":
        return lock.acquire(timeout=0.01)
    if name in ("lock.release", "rlock.release", "sem.release"):
        return {"lock.release": lock, "rlock.release": rlock, "sem.release": sem}[name].release()
    if name == "e.wait":
        return event.wait(0.01)
    return getattr(event, name[2:])()


def _outcomes(objects, ops):
    out = []
    for op in ops:
        try:
            out.append(("ok", _do(objects, op)))
        except BaseException as exc:  # noqa: BLE001 - the exception type is the outcome
            out.append(("raise", type(exc).__name__))
    return out


def _objects(manager):
    return (manager.dict(a=1), manager.list([1, 2]), manager.Value("i", 0), manager.Namespace(x=0),
            manager.Queue(), manager.Lock(), manager.RLock(), manager.BoundedSemaphore(1), manager.Event())


def in_parent(ops, sink, manager=None):
    if manager is not None:  # the real side: one real manager for the module (a server start costs a tenth of a second)
        sink.append(_outcomes(_objects(manager), ops))
        return
    with multiprocessing.get_context("fork").Manager() as served:
        sink.append(_outcomes(_objects(served), ops))


def _child(objects, ops, report):
    report.put(_outcomes(objects, ops))


def in_child(ops, sink, manager=None):
    ctx = multiprocessing.get_context("fork")
    with ctx.Manager() if manager is None else _Kept(manager) as used:
        objects, report = _objects(used), ctx.Queue()
        child = ctx.Process(target=_child, args=(objects, ops, report))
        child.start()
        sink.append(report.get())
        child.join()


class _Kept:
    """The module's real manager, in a ``with`` that leaves it running."""

    def __init__(self, manager):
        self.manager = manager

    def __enter__(self):
        return self.manager

    def __exit__(self, *exc):
        return None


@SETTINGS
@given(ops=OPS)
def test_served_manager_proxies_match_a_real_manager_in_the_parent(real_manager, ops):
    compare_to_real(in_parent, ops, real_manager)


@CHILD_SETTINGS
@given(ops=OPS)
def test_served_manager_proxies_match_a_real_manager_in_a_child(real_manager, ops):
    compare_to_real(in_child, ops, real_manager)


def test_a_planted_wrong_model_fails_the_comparison(real_manager, monkeypatch):
    """A list whose ``pop()`` takes the first item instead of the last: the comparison must find it."""
    real_pop = ManagedList.pop
    monkeypatch.setattr(ManagedList, "pop", lambda self, index=-1: real_pop(self, 0))

    # found is enough (no shrinking); up to 200 examples, so that one with a pop comes whatever the seed
    @settings(SETTINGS, max_examples=200, phases=[Phase.generate])
    @given(OPS)
    def compared(ops):
        compare_to_real(in_parent, ops, real_manager)

    with pytest.raises(AssertionError):
        compared()
