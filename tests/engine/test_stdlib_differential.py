"""The stand-ins behave like the stdlib: hypothesis-generated programs run on the real stdlib and under racecheck.

* Sequential programs (one thread; timeouts, errors, abort/reset, cancel, task_done/join...) have one outcome:
  racecheck's and the stdlib's must be equal, result by result and exception by exception.
* Concurrent programs over the non-blocking operations of Lock, Semaphore, BoundedSemaphore, Event and the
  queues: the stdlib allows exactly the outcomes of the op-by-op interleavings (each such operation is atomic
  under its internal lock), which we enumerate on real objects; every schedule racecheck explores (exhaustively)
  must end in one of them, and a run on real threads too.
* Schedule-dependent programs on Barrier, Condition, queues with task_done/join, futures and the executor: the
  property the stdlib guarantees (indices form a permutation, reset breaks waiters, pending futures of a broken
  pool fail, a cancelled future is either cancelled or done) must hold in every explored schedule, and the
  schedule-independent part of the outcome must equal the stdlib's.

This module is instrumented while racecheck explores it, so the plain ``threading``/``queue``/``concurrent``/
``time`` names below are the stand-ins there and the real stdlib everywhere else: the same interpreter runs both.
"""

import concurrent.futures
import functools
import importlib
import itertools
import queue
import threading
import time

import pytest
import racecheck
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from racecheck.runtime import current_thread_record
from racecheck.runtime.chooser import Chooser
from racecheck.search.strategy import Strategy

# The stand-ins' behaviour against the stdlib's is the subject, not memory: explored with memory=False (the
# drivers' own lists and counters would be memory points, multiplying the schedules of every exhaustive search).
_explore = functools.partial(racecheck.explore, memory=False)

T = 0.001  # a real timeout: short enough to cost nothing in the stdlib run, virtual under racecheck

SETTINGS = settings(
    max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow], database=None
)
SLOW_SETTINGS = settings(SETTINGS, max_examples=400)


def _outcome(call):
    try:
        return ("ok", call())
    except BaseException as exc:  # noqa: BLE001 - the exception type is the outcome
        return ("raise", type(exc).__name__)


def _hypothesis(strategy, config, check):
    """Run ``check`` on examples of ``strategy`` (a fresh test function, so settings apply once per call)."""

    def test(example):
        check(example)

    given(strategy)(config(test))()


def _under_racecheck(fn):
    """Run ``fn`` as a controlled test function once and return what it returned."""
    box = {}

    def test_fn():
        box["value"] = fn()

    result = _explore(test_fn, strategy="random", schedules=1, shrink_budget=0)
    assert result.ok, result.failure
    return box["value"]


# ----- sequential programs: one outcome, must be equal -------------------------------------------------------------


def _lock_program(kind, ops):
    lock = threading.Lock() if kind == "Lock" else threading.RLock()
    calls = {
        "acquire-timeout": lambda: lock.acquire(timeout=T),
        "try-acquire": lambda: lock.acquire(False),
        "acquire-0": lambda: lock.acquire(True, 0),
        "bad-nonblocking-timeout": lambda: lock.acquire(False, 1),
        "bad-negative-timeout": lambda: lock.acquire(timeout=-2),
        "release": lambda: lock.release(),
        "locked": lambda: lock.locked(),
    }
    return [_outcome(calls[op]) for op in ops]


def _condition_program(lock_kind, ops):
    lock = {"none": None, "Lock": threading.Lock, "RLock": threading.RLock}[lock_kind]
    cond = threading.Condition(lock() if lock else None)
    flag = {"value": False}
    calls = {
        "acquire": lambda: cond.acquire(timeout=T),
        "try-acquire": lambda: cond.acquire(False),
        "release": lambda: cond.release(),
        "notify": lambda: cond.notify(),
        "notify-2": lambda: cond.notify(2),
        "notify_all": lambda: cond.notify_all(),
        "wait": lambda: cond.wait(T),
        "wait-0": lambda: cond.wait(0),
        "wait-negative": lambda: cond.wait(-1),
        "wait_for": lambda: cond.wait_for(lambda: flag["value"], T),
        "wait_for-0": lambda: cond.wait_for(lambda: flag["value"], 0),
        "flip": lambda: flag.update(value=not flag["value"]),
    }
    return [_outcome(calls[op]) for op in ops]


def _event_program(ops):
    event = threading.Event()
    calls = {
        "set": event.set, "clear": event.clear, "is_set": event.is_set,
        "wait": lambda: event.wait(T), "wait-0": lambda: event.wait(0), "wait-negative": lambda: event.wait(-1),
    }
    return [_outcome(calls[op]) for op in ops]


def _semaphore_program(kind, value, ops):
    made = _outcome(lambda: getattr(threading, kind)(value))
    if made[0] == "raise":
        return [made]
    sem = made[1]
    calls = {
        "try-acquire": lambda: sem.acquire(False),
        "acquire-timeout": lambda: sem.acquire(timeout=T),
        "acquire-negative": lambda: sem.acquire(timeout=-1),
        "bad-nonblocking-timeout": lambda: sem.acquire(False, 1),
        "release": lambda: sem.release(),
        "release-2": lambda: sem.release(2),
        "release-0": lambda: sem.release(0),
    }
    return [("ok", "made")] + [_outcome(calls[op]) for op in ops]


def _barrier_program(parties, action_kind, default_timeout, ops):
    log = []

    def action():
        log.append("action")
        if action_kind == "raises":
            raise ValueError("action failed")

    barrier = threading.Barrier(parties, None if action_kind == "none" else action, T if default_timeout else None)

    def wait(timeout):
        if parties > 1 and timeout is None and not default_timeout:
            timeout = T  # alone, it would wait forever
        return barrier.wait(timeout)

    calls = {
        "wait": lambda: wait(None), "wait-timeout": lambda: wait(T), "wait-0": lambda: wait(0),
        "abort": barrier.abort, "reset": barrier.reset, "n_waiting": lambda: barrier.n_waiting,
        "broken": lambda: barrier.broken, "parties": lambda: barrier.parties,
    }
    return [_outcome(calls[op]) for op in ops] + [("log", tuple(log))]


def _queue_program(kind, maxsize, ops):
    q = queue.SimpleQueue() if kind == "SimpleQueue" else getattr(queue, kind)(maxsize)
    counter = itertools.count()

    def join():
        if getattr(q, "unfinished_tasks", 0) > 0:
            return "would block"
        return q.join()

    calls = {
        "put": lambda: q.put(next(counter) % 3, timeout=T),
        "put-nowait": lambda: q.put_nowait(next(counter) % 3),
        "put-nonblocking": lambda: q.put(next(counter) % 3, False),
        "put-negative": lambda: q.put(next(counter) % 3, timeout=-1),
        "get": lambda: q.get(timeout=T),
        "get-nowait": q.get_nowait,
        "get-nonblocking": lambda: q.get(False),
        "get-negative": lambda: q.get(timeout=-1),
        "qsize": q.qsize, "empty": q.empty, "full": lambda: q.full(),
        "task_done": lambda: q.task_done(), "join": join,
    }
    return [_outcome(calls[op]) for op in ops]


def _futures_program(ops):
    futures = [concurrent.futures.Future(), concurrent.futures.Future()]
    called = []

    def name(f):
        return futures.index(f)

    def waited(timeout, when):
        done, not_done = concurrent.futures.wait(futures, timeout, when)
        return sorted(map(name, done)), sorted(map(name, not_done))

    def completed(timeout):
        seen = []
        try:
            for f in concurrent.futures.as_completed(futures, timeout):
                seen.append(name(f))
        except BaseException as exc:  # noqa: BLE001
            return sorted(seen), type(exc).__name__
        return sorted(seen), None

    def on(i, op):
        f = futures[i]
        return {
            "set_result": lambda: f.set_result(i),
            "set_exception": lambda: f.set_exception(ValueError(i)),
            "result": lambda: f.result(T),
            "exception": lambda: repr(f.exception(T)),
            "cancel": f.cancel, "cancelled": f.cancelled, "done": f.done, "running": f.running,
            "start": f.set_running_or_notify_cancel,
            "callback": lambda: f.add_done_callback(lambda g: called.append(name(g))),
        }[op]

    out = []
    for op in ops:
        if op[0] == "wait":
            out.append(_outcome(lambda op=op: waited(T, op[1])))
        elif op[0] == "as_completed":
            out.append(_outcome(lambda op=op: completed(T if op[1] else None) if op[1] or _all_done(futures)
                                else "would block"))
        else:
            out.append(_outcome(on(op[0], op[1])))
    return out + [("callbacks", tuple(called))]


def _all_done(futures):
    """Whether ``as_completed(futures)`` without a timeout returns rather than blocks: the stdlib waits for a
    cancelled future until it is *notified* (``set_running_or_notify_cancel``), although ``done()`` is already
    True (found when this guard used ``done()``: the slow run hung in the real stdlib)."""
    return all(f._state in ("FINISHED", "CANCELLED_AND_NOTIFIED") for f in futures)


PROGRAMS = {
    "lock": st.builds(
        lambda kind, ops: (_lock_program, kind, ops),
        st.sampled_from(["Lock", "RLock"]),
        st.lists(st.sampled_from(["acquire-timeout", "try-acquire", "acquire-0", "bad-nonblocking-timeout",
                                  "bad-negative-timeout", "release", "locked"]), max_size=8),
    ),
    "condition": st.builds(
        lambda kind, ops: (_condition_program, kind, ops),
        st.sampled_from(["none", "Lock", "RLock"]),
        st.lists(st.sampled_from(["acquire", "try-acquire", "release", "notify", "notify-2", "notify_all", "wait",
                                  "wait-0", "wait-negative", "wait_for", "wait_for-0", "flip"]), max_size=8),
    ),
    "event": st.builds(
        lambda ops: (_event_program, ops),
        st.lists(st.sampled_from(["set", "clear", "is_set", "wait", "wait-0", "wait-negative"]), max_size=8),
    ),
    "semaphore": st.builds(
        lambda kind, value, ops: (_semaphore_program, kind, value, ops),
        st.sampled_from(["Semaphore", "BoundedSemaphore"]),
        st.integers(-1, 2),
        st.lists(st.sampled_from(["try-acquire", "acquire-timeout", "acquire-negative", "bad-nonblocking-timeout",
                                  "release", "release-2", "release-0"]), max_size=8),
    ),
    "barrier": st.builds(
        lambda parties, action, default_timeout, ops: (_barrier_program, parties, action, default_timeout, ops),
        st.integers(1, 3),
        st.sampled_from(["none", "records", "raises"]),
        st.booleans(),
        st.lists(st.sampled_from(["wait", "wait-timeout", "wait-0", "abort", "reset", "n_waiting", "broken",
                                  "parties"]), max_size=8),
    ),
    "queue": st.builds(
        lambda kind, maxsize, ops: (_queue_program, kind, maxsize, ops),
        st.sampled_from(["Queue", "LifoQueue", "PriorityQueue", "SimpleQueue"]),
        st.integers(0, 2),
        st.lists(st.sampled_from(["put", "put-nowait", "put-nonblocking", "put-negative", "get", "get-nowait",
                                  "get-nonblocking", "get-negative", "qsize", "empty", "full", "task_done",
                                  "join"]), max_size=10),
    ),
    "futures": st.builds(
        lambda ops: (_futures_program, ops),
        st.lists(
            st.one_of(
                st.tuples(st.integers(0, 1), st.sampled_from(["set_result", "set_exception", "result", "exception",
                                                               "cancel", "cancelled", "done", "running", "start",
                                                               "callback"])),
                st.tuples(st.just("wait"), st.sampled_from(["FIRST_COMPLETED", "FIRST_EXCEPTION", "ALL_COMPLETED"])),
                st.tuples(st.just("as_completed"), st.booleans()),
            ),
            max_size=8,
        ),
    ),
}


def _check_sequential(program):
    build, *args = program
    expected = build(*args)
    assert _under_racecheck(lambda: build(*args)) == expected


@pytest.mark.parametrize("family", sorted(PROGRAMS))
def test_sequential_programs_agree_with_the_stdlib(family):
    _hypothesis(PROGRAMS[family], SETTINGS, _check_sequential)


@pytest.mark.slow
@pytest.mark.parametrize("family", sorted(PROGRAMS))
def test_sequential_programs_agree_with_the_stdlib_many(family):
    _hypothesis(PROGRAMS[family], SLOW_SETTINGS, _check_sequential)


def test_clocks_read_like_the_stdlib():
    def read():
        out = {}
        for name in ("monotonic", "perf_counter", "time"):
            before = getattr(time, name)()
            before_ns = getattr(time, f"{name}_ns")()
            time.sleep(T)
            after, after_ns = getattr(time, name)(), getattr(time, f"{name}_ns")()
            # (floats near the epoch resolve ~0.2 µs: compare elapsed time with that much slack)
            out[name] = (type(before).__name__, type(before_ns).__name__, after - before >= T * 0.999,
                         after_ns - before_ns >= T * 1e9 * 0.999, abs(before_ns / 1e9 - before) < 1.0)
        out["epoch-like"] = time.time() > 1_600_000_000
        return out

    assert _under_racecheck(read) == read()


# ----- concurrent programs over atomic operations: every racecheck outcome is one the stdlib allows ----------------

ATOMIC_OPS = {
    "Lock": ["try-acquire", "release", "locked"],
    "Semaphore": ["try-acquire", "release"],
    "BoundedSemaphore": ["try-acquire", "release"],
    "Event": ["set", "clear", "is_set", "wait-0"],
    "Queue": ["put-nowait", "get-nowait", "qsize", "empty", "full"],
    "LifoQueue": ["put-nowait", "get-nowait", "qsize", "empty", "full"],
    "PriorityQueue": ["put-nowait", "get-nowait", "qsize", "empty", "full"],
    "SimpleQueue": ["put-nowait", "get-nowait", "qsize", "empty"],
}


def _make(kind):
    if kind in ("Queue", "LifoQueue", "PriorityQueue"):
        return getattr(queue, kind)(2)
    if kind == "SimpleQueue":
        return queue.SimpleQueue()
    if kind == "BoundedSemaphore":
        return threading.BoundedSemaphore(1)
    if kind == "Semaphore":
        return threading.Semaphore(1)
    return getattr(threading, kind)()


def _apply(obj, op, item):
    calls = {
        "try-acquire": lambda: obj.acquire(False), "release": lambda: obj.release(), "locked": lambda: obj.locked(),
        "set": lambda: obj.set(), "clear": lambda: obj.clear(), "is_set": lambda: obj.is_set(),
        "wait-0": lambda: obj.wait(0), "put-nowait": lambda: obj.put_nowait(item),
        "get-nowait": lambda: obj.get_nowait(),
        "qsize": lambda: obj.qsize(), "empty": lambda: obj.empty(), "full": lambda: obj.full(),
    }
    return _outcome(calls[op])


def _run_threads(kind, threads, start_threads):
    """Run each thread's (op, item) list on one shared object; return the per-thread outcomes."""
    obj = _make(kind)
    results = [[] for _ in threads]

    def body(i):
        for op, item in threads[i]:
            results[i].append(_apply(obj, op, item))

    if start_threads:
        workers = [threading.Thread(target=body, args=(i,)) for i in range(len(threads))]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
    return tuple(tuple(r) for r in results)


def _allowed_outcomes(kind, threads):
    """Every op-by-op interleaving, executed on fresh real stdlib objects in this thread."""
    allowed = set()
    slots = [i for i, ops in enumerate(threads) for _ in ops]
    for order in set(itertools.permutations(slots)):
        obj = _make(kind)
        positions = [0] * len(threads)
        results = [[] for _ in threads]
        for i in order:
            op, item = threads[i][positions[i]]
            positions[i] += 1
            results[i].append(_apply(obj, op, item))
        allowed.add(tuple(tuple(r) for r in results))
    return allowed


@st.composite
def atomic_programs(draw, max_threads=2):
    """2 threads of 1-3 operations (an exhaustive search is a few hundred schedules); 3 threads of 1 (about a
    thousand) in the slow suite."""
    kind = draw(st.sampled_from(sorted(ATOMIC_OPS)))
    op = st.tuples(st.sampled_from(ATOMIC_OPS[kind]), st.integers(0, 2))
    n = draw(st.integers(2, max_threads))
    threads = [draw(st.lists(op, min_size=1, max_size=3 if n == 2 else 1)) for _ in range(n)]
    return kind, threads


def _check_atomic(program):
    kind, threads = program
    allowed = _allowed_outcomes(kind, threads)
    seen = set()

    def test_fn():
        outcome = _run_threads(kind, threads, start_threads=True)
        seen.add(outcome)
        assert outcome in allowed, f"racecheck produced {outcome}, the stdlib allows {sorted(allowed)}"

    result = _explore(test_fn, strategy="dfs", preemption_bound=None, schedules=20_000, shrink_budget=0)
    assert result.ok, result.failure
    assert result.exhausted
    assert seen <= allowed and seen
    assert _run_threads(kind, threads, start_threads=True) in allowed  # and the model matches real threads


def test_concurrent_atomic_programs_stay_within_what_the_stdlib_allows():
    _hypothesis(atomic_programs(), settings(SETTINGS, max_examples=25), _check_atomic)


@pytest.mark.slow
def test_concurrent_atomic_programs_stay_within_what_the_stdlib_allows_many():
    _hypothesis(atomic_programs(max_threads=3), settings(SETTINGS, max_examples=150), _check_atomic)


# ----- schedule-dependent programs: the stdlib's guarantees hold in every schedule ---------------------------------


def _explore_all(test_fn, bound=2):
    result = _explore(test_fn, strategy="dfs", preemption_bound=bound, schedules=20_000, shrink_budget=0)
    result.raise_on_failure()
    assert result.exhausted


def _in_real_threads(fn, n):
    threads = [threading.Thread(target=fn, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


@given(parties=st.integers(2, 3), cycles=st.integers(1, 2))
@SETTINGS
def test_barrier_indices_are_a_permutation_every_cycle(parties, cycles):
    def program():
        barrier = threading.Barrier(parties)
        got = [[] for _ in range(parties)]
        _in_real_threads(lambda i: got[i].extend(barrier.wait() for _ in range(cycles)), parties)
        for cycle in range(cycles):
            assert sorted(g[cycle] for g in got) == list(range(parties)), got
        return barrier.n_waiting, barrier.broken

    expected = program()
    _explore_all(lambda: _equal(program(), expected), bound=1 if parties == 3 else 2)


def _equal(got, expected):
    assert got == expected, (got, expected)


@pytest.mark.parametrize("breaker", ["reset", "abort"])
def test_barrier_reset_and_abort_break_waiters(breaker):
    def program():
        barrier = threading.Barrier(2, timeout=5)
        outcome = []

        def waiter():
            outcome.append(_outcome(barrier.wait)[0:2])

        t = threading.Thread(target=waiter)
        t.start()
        while barrier.n_waiting == 0 and t.is_alive():
            time.sleep(0)
        getattr(barrier, breaker)()
        t.join()
        return outcome, barrier.broken

    expected = program()
    assert expected[0] == [("raise", "BrokenBarrierError")]
    # The waiting loop yields (sleep(0)): random walks are fair to it.
    result = _explore(lambda: _equal(program(), expected), strategy="random", schedules=200, seed=0)
    assert result.ok, result.failure


@given(consumers=st.integers(1, 2), items=st.integers(1, 3), kind=st.sampled_from(["Queue", "LifoQueue"]))
@SETTINGS
def test_queue_task_done_and_join(consumers, items, kind):
    def program():
        q = getattr(queue, kind)()
        got = []

        def consume(i):
            while True:
                item = q.get()
                if item is None:
                    q.task_done()
                    return
                got.append(item)
                q.task_done()

        workers = [threading.Thread(target=consume, args=(i,)) for i in range(consumers)]
        for w in workers:
            w.start()
        for n in range(items):
            q.put(n)
        q.join()
        done_before_stop = sorted(got)
        for _ in workers:
            q.put(None)
        for w in workers:
            w.join()
        return done_before_stop, q.unfinished_tasks, _outcome(q.task_done)

    expected = program()
    _explore_all(lambda: _equal(program(), expected), bound=1)


def test_condition_wait_for_wakes_on_the_predicate():
    def program():
        cond = threading.Condition()
        state = {"ready": False}
        out = []

        def consumer(i):
            with cond:
                out.append(cond.wait_for(lambda: state["ready"], timeout=60))

        t = threading.Thread(target=consumer, args=(0,))
        t.start()
        with cond:
            state["ready"] = True
            cond.notify_all()
        t.join()
        with cond:
            timed_out = cond.wait_for(lambda: False, timeout=T)
        return out, timed_out

    expected = program()
    assert expected == ([True], False)
    _explore_all(lambda: _equal(program(), expected))


@given(jobs=st.integers(1, 3), workers=st.integers(1, 2), fail_init=st.booleans())
@SETTINGS
def test_executor_initializer_and_results(jobs, workers, fail_init):
    def program():
        inits = []

        def init(tag):
            inits.append(tag)
            if fail_init:
                raise ValueError("initializer failed")

        pool = concurrent.futures.ThreadPoolExecutor(max_workers=workers, initializer=init, initargs=("w",))
        outcomes = []
        for n in range(jobs):
            submitted = _outcome(lambda n=n: pool.submit(pow, n, 2))
            if submitted[0] == "raise":
                outcomes.append(submitted)
            else:
                outcomes.append(_outcome(lambda f=submitted[1]: f.result(timeout=60)))
        pool.shutdown(wait=True)
        after = _outcome(lambda: pool.submit(pow, 1, 1))
        return outcomes, after, set(inits) <= {"w"} and 1 <= len(inits) <= workers

    expected = program()
    if fail_init:
        def check():
            outcomes, after, inits_ok = program()
            assert all(o == ("raise", "BrokenThreadPool") for o in outcomes), outcomes
            assert after[1] in ("BrokenThreadPool", "RuntimeError") and inits_ok
        assert all(o == ("raise", "BrokenThreadPool") for o in expected[0])
        _explore_all(check, bound=1)
    else:
        assert expected[0] == [("ok", n * n) for n in range(jobs)]
        _explore_all(lambda: _equal(program(), expected), bound=1)


@given(jobs=st.integers(1, 4))
@SETTINGS
def test_executor_shutdown_cancel_futures(jobs):
    def program():
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
        futures = [pool.submit(pow, n, 2) for n in range(jobs)]
        pool.shutdown(wait=True, cancel_futures=True)
        for n, f in enumerate(futures):  # the drain and the worker race: any subset may have run (as in CPython)
            assert f.done()
            assert f.cancelled() or f.result() == n * n
        return _outcome(lambda: pool.submit(pow, 1, 1))

    assert program() == ("raise", "RuntimeError")
    _explore_all(lambda: _equal(program(), ("raise", "RuntimeError")), bound=1)


def test_as_completed_and_wait_across_threads():
    def program():
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=2)
        futures = [pool.submit(pow, n, 2) for n in range(3)]
        results = sorted(f.result() for f in concurrent.futures.as_completed(futures, timeout=60))
        done, not_done = concurrent.futures.wait(futures, timeout=60)
        pool.shutdown()
        return results, len(done), len(not_done)

    expected = program()
    assert expected == ([0, 1, 4], 3, 0)
    _explore_all(lambda: _equal(program(), expected), bound=1)


# ----- what is a scheduling point ----------------------------------------------------------------------------------


def test_releases_are_traced_but_are_not_scheduling_points():
    def program():
        sem = threading.Semaphore(1)
        lock = threading.Lock()
        with sem, lock:
            pass
        raise AssertionError("show the trace")

    trace = _explore(program, schedules=1, shrink_budget=0).failure.trace
    rows = [line for line in trace.splitlines() if "release " in line]
    assert len(rows) == 2 and all(row[:4].strip() == "" for row in rows), trace  # info rows carry no step number


class _SpyChooser(Chooser):
    def __init__(self, log):
        self.log = log

    def pick_thread(self, decision):
        self.log.append((current_thread_record().op, decision.yielding))
        enabled = decision.enabled
        return list(enabled).index(0) if 0 in enabled else 0  # T0 whenever it can: the busy thread stays runnable

    def pick_value(self, n, label):
        return 0


def test_a_failed_non_blocking_attempt_is_a_yielding_point(monkeypatch):
    log = []

    class Spy(Strategy):
        def new_execution(self, index, sampled=False):
            return _SpyChooser(log)

    monkeypatch.setattr(importlib.import_module("racecheck.search.exploration"), "make_strategy", lambda *args: Spy())

    def program():
        lock, q = threading.Lock(), queue.Queue()
        held = threading.Event()
        stop = threading.Event()

        def holder():
            with lock:
                held.set()
                stop.wait()

        t = threading.Thread(target=holder)
        t.start()
        busy = threading.Thread(target=lambda: [racecheck.point("busy") for _ in range(50)])  # always runnable
        busy.start()
        held.wait()
        lock.acquire(False)  # fails: the holder has it
        lock.acquire(timeout=0)
        _outcome(q.get_nowait)
        stop.set()
        t.join()
        assert lock.acquire(False)  # succeeds: not a yield
        racecheck.point("after")
        busy.join()
        raise AssertionError("show the trace")

    # memory=False: which thread runs right before each attempt is the subject; the steps of memory accesses (the
    # busy thread's list comprehension, the lambdas' cells) would sit between them.
    result = _explore(program, schedules=1, shrink_budget=0)
    events = [e for e in result.failure.events if e.switch != "info"]
    before = {}
    for previous, event in zip(events, events[1:], strict=False):
        if event.tid == 0 and event.op.split(" ")[0] in ("try-acquire", "get"):
            before.setdefault(event.op.split(" ")[0], []).append((previous.tid, previous.switch))
    # The chooser keeps T0 whenever it can, so only fairness to a yielding T0 lets the busy thread T2 run just
    # before T0's attempt, and switching away from a yielder is not a preemption. The failed attempts (try-acquire,
    # acquire(timeout=0), get_nowait on an empty queue) yield; the last try-acquire succeeds and does not.
    assert before["try-acquire"][:2] == [(2, "switch"), (2, "switch")] and before["try-acquire"][2][0] == 0, before
    assert before["get"] == [(2, "switch")], before


def test_a_future_made_in_a_run_has_the_stdlib_fields_and_a_controlled_condition():
    """Inside a run, ``Future()`` sets the stdlib's fields itself (skipping a real Condition that would be replaced):
    the same fields, the same initial values, as a stdlib future of this Python."""
    from racecheck.sync import futures as controlled_futures
    from racecheck.sync.conditions import ControlledCondition

    assert controlled_futures._OWN_INIT  # the stdlib's __init__ is the one the shortcut mirrors
    made = []
    _explore(lambda: made.append(controlled_futures.Future()), strategy="dfs", schedules=1)
    real = concurrent.futures.Future()
    ours = made[0]
    assert set(vars(ours)) == set(vars(real))
    assert {k: v for k, v in vars(ours).items() if k != "_condition"} == {
        k: v for k, v in vars(real).items() if k != "_condition"
    }
    assert isinstance(ours._condition, ControlledCondition)
