"""The served multiprocessing objects behave like the real ones: hypothesis-generated sequences of operations on a
Queue, a Pipe, a Value (with its lock), a Lock and an Event, run on the real module and under racecheck, in the
parent and inside one child process; the outcomes (results and exception types) must be equal, op for op.

Waits that would find nothing use a short real timeout (virtual under racecheck). ``empty()`` right after a
``put`` is left out: the real queue's feeder thread makes its answer depend on timing."""

import functools
import multiprocessing

import racecheck
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

T = 0.2  # long enough for the real queue's feeder and pipe to deliver what was sent

SETTINGS = settings(max_examples=25, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
CHILD_SETTINGS = settings(SETTINGS, max_examples=6)

OPS = st.lists(st.one_of(
    st.tuples(st.just("q.put"), st.integers(-3, 3)),
    st.just(("q.get",)), st.just(("q.qsize",)),
    st.tuples(st.sampled_from(["a.send", "b.send"]), st.integers(-3, 3)),
    st.sampled_from([("a.recv",), ("b.recv",), ("a.close",), ("b.poll",)]),
    st.tuples(st.just("v.set"), st.sampled_from([0, 7, -1, 2 ** 31, 2 ** 40])),
    st.sampled_from([("v.get",), ("v.lock",), ("v.unlock",)]),
    st.sampled_from([("l.try",), ("l.timed",), ("l.release",)]),
    st.sampled_from([("e.set",), ("e.clear",), ("e.is_set",), ("e.wait",)]),
), max_size=8)


def _do(objects, op):
    q, (a, b), v, lock, event = objects
    name, *arg = op
    if name == "q.put":
        return q.put(arg[0])
    if name == "q.get":
        return q.get(timeout=T)
    if name == "q.qsize":
        return q.qsize()
    if name in ("a.send", "b.send"):
        return (a if name == "a.send" else b).send(arg[0])
    if name in ("a.recv", "b.recv"):
        end = a if name == "a.recv" else b
        return end.recv() if end.poll(T) else "nothing"
    if name == "a.close":
        return a.close()
    if name == "b.poll":
        return b.poll(T)
    if name == "v.set":
        v.value = arg[0]
        return None
    if name == "v.get":
        return v.value
    if name == "v.lock":
        return v.get_lock().acquire(timeout=0.01)
    if name == "v.unlock":
        return v.get_lock().release()
    if name == "l.try":
        return lock.acquire(False)
    if name == "l.timed":
        return lock.acquire(timeout=0.01)
    if name == "l.release":
        return lock.release()
    if name == "e.set":
        return event.set()
    if name == "e.clear":
        return event.clear()
    if name == "e.is_set":
        return event.is_set()
    return event.wait(0.01)


def _outcomes(objects, ops):
    out = []
    for op in ops:
        try:
            out.append(("ok", _do(objects, op)))
        except BaseException as exc:  # noqa: BLE001 - the exception type is the outcome
            out.append(("raise", type(exc).__name__))
    return out


def _objects(ctx):
    return ctx.Queue(), ctx.Pipe(), ctx.Value("i", 0), ctx.Lock(), ctx.Event()


def in_parent(ops, sink):
    sink.append(_outcomes(_objects(multiprocessing.get_context("fork")), ops))


def _child(objects, ops, report):
    report.put(_outcomes(objects, ops))


def in_child(ops, sink):
    ctx = multiprocessing.get_context("fork")
    objects, report = _objects(ctx), ctx.Queue()
    child = ctx.Process(target=_child, args=(objects, ops, report))
    child.start()
    sink.append(report.get())
    child.join()


def _compare(program, ops):
    real: list = []
    program(ops, real)
    served: list = []
    result = racecheck.explore(functools.partial(program, ops, served), schedules=1, memory=False)
    assert result.ok, result.failure
    assert served[-1] == real[0], ops


@SETTINGS
@given(OPS)
def test_served_objects_match_the_real_ones_in_the_parent(ops):
    _compare(in_parent, ops)


@CHILD_SETTINGS
@given(OPS)
def test_served_objects_match_the_real_ones_in_a_child(ops):
    _compare(in_child, ops)
