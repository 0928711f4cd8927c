"""The carrier runs schedules in batches (racecheck.runtime.batch) while the explorer's thread only supervises: every
schedule is counted once across batches, a run that ends while its root thread waits is unwound by the carrier
itself, a thread stuck on its way out of a failed run is left behind and reported instead of hanging the
exploration, and an error raised on the carrier (a progress callback's) reaches the caller."""

from __future__ import annotations

import _thread
import contextlib
import functools
import signal
import threading

import pytest
import racecheck
from engine_threads import REAL
from engine_threads import racecheck_threads as _racecheck_threads
from racecheck import runtime
from racecheck.runtime.batch import BATCH_LIMIT

# The subject here is batches of schedules on one carrier, not memory:
# explored with memory=False (memory watching adds a warm-up run and steps of its own).
_explore = functools.partial(racecheck.explore, memory=False)


def test_every_schedule_of_many_batches_is_run_and_counted_once_on_one_carrier():
    ran = []

    def fn():
        ran.append(REAL["ident"]())
        t = threading.Thread(target=racecheck.point, args=("worker",))
        t.start()
        racecheck.point("main")
        t.join()

    schedules = 3 * BATCH_LIMIT + 5
    seen = []
    result = _explore(fn, strategy="random", schedules=schedules, skip_duplicates=False,
                               progress=lambda p: seen.append(p.index))
    assert result.ok and result.schedules == schedules
    assert len(ran) == schedules and len(set(ran)) == 1  # one carrier served every batch
    assert seen == list(range(schedules))  # told once per schedule, in order
    assert _racecheck_threads() == []


@pytest.mark.parametrize(("schedules", "batches"), [(1, 1), (BATCH_LIMIT, 1), (BATCH_LIMIT + 1, 2), (100, 4)])
def test_no_batch_is_started_once_the_budget_is_spent(monkeypatch, schedules, batches):
    """Each batch is a hand-over to the carrier and back; one started only to find nothing left to run is waste."""
    import importlib

    session_module = importlib.import_module("racecheck.search.session")
    started = []
    real_run_batch = session_module.Session.run_batch

    def counting(self, *args, **kwargs):
        started.append(1)
        return real_run_batch(self, *args, **kwargs)

    monkeypatch.setattr(session_module.Session, "run_batch", counting)

    def fn():
        t = threading.Thread(target=racecheck.point, args=("worker",))
        t.start()
        t.join()

    result = _explore(fn, schedules=schedules, skip_duplicates=False)
    assert result.ok and result.schedules == schedules
    assert len(started) == batches
    started.clear()
    assert _explore(fn, strategy="dfs", schedules=schedules).exhausted
    assert len(started) == 1  # dfs knows it is done when its last branch has run


class _WhereRunsEnd:
    """An extension that notes which OS thread ran each run's end hook: the carrier when it finished the run."""

    name = "test-where-runs-end"

    def __init__(self):
        self.ended = []

    def active(self, config):
        return True

    def modules(self, config):
        return []

    def config_key(self, config):
        return ""

    def begin_run(self, run, config):
        pass

    def end_run(self, run, crashed):
        self.ended.append(REAL["ident"]())


@pytest.fixture
def where_runs_end():
    ext = _WhereRunsEnd()
    runtime.register_extension(ext)
    try:
        yield ext
    finally:
        runtime._extensions.pop(ext.name, None)


def test_a_failure_while_the_root_waits_is_unwound_by_the_carrier(where_runs_end):
    ran, unwound = [], []

    def fn():
        ran.append(REAL["ident"]())

        def worker():
            raise ValueError("worker failed")

        t = threading.Thread(target=worker)
        t.start()
        try:
            t.join()  # the root waits here when the worker fails
        finally:
            unwound.append(True)

    result = _explore(fn, strategy="dfs", schedules=10, shrink_budget=0, race_budget=0)
    assert result.failure is not None and isinstance(result.failure.exception, ValueError)
    assert result.failure.thread == "T1"
    assert result.leaked_threads == []
    assert len(unwound) == len(ran) >= 2  # the failing run and its located rerun, both unwound
    assert len(set(ran)) == 1  # the carrier came back from each and served the next
    assert where_runs_end.ended == ran  # and finished each run itself: the explorer's thread never stepped in
    assert _racecheck_threads() == []


def test_a_thread_stuck_on_its_way_out_of_a_failed_run_is_left_behind_not_waited_for(where_runs_end):
    gate = threading.Lock()  # a real lock made outside any run: racecheck cannot see it
    gate.acquire()

    def fn():
        def worker():
            raise ValueError("worker failed")

        t = threading.Thread(target=worker)
        t.start()
        try:
            t.join()
        finally:
            gate.acquire()  # unwinding, the root blocks where racecheck cannot see

    try:
        result = _explore(fn, strategy="dfs", schedules=10, shrink_budget=0, race_budget=0, watchdog=0.5)
        assert result.failure is not None and isinstance(result.failure.exception, ValueError)
        assert result.leaked_threads == ["T0"]
        assert "could not be unwound" in "".join(getattr(result.failure.exception, "__notes__", []))
        assert where_runs_end.ended == [REAL["ident"]()]  # the explorer's thread took the run over and finished it
        again = _explore(lambda: None, strategy="random", schedules=3, skip_duplicates=False)
        assert again.ok and again.schedules == 3  # a fresh carrier serves the next exploration
    finally:
        gate.release()
    for t in _racecheck_threads():
        t.join(timeout=5)
    assert _racecheck_threads() == []


def test_an_error_raised_on_the_carrier_reaches_the_caller():
    def progress(snapshot):
        if snapshot.schedules == 3:
            raise RuntimeError("progress display broke")

    with pytest.raises(RuntimeError, match="progress display broke"):
        _explore(lambda: racecheck.point("p"), strategy="random", schedules=10, skip_duplicates=False,
                          progress=progress)
    assert _racecheck_threads() == []


@contextlib.contextmanager
def sigint_raises():
    """SIGINT raises KeyboardInterrupt in the main thread for the duration, whatever the suite was started with.

    ``_thread.interrupt_main()`` simulates a SIGINT, and does nothing while SIGINT is ignored (a suite started in the
    background with ``cmd &`` or under nohup): so Python's own handler is installed here, and the previous one put
    back after. Where none can be installed (not the main thread), the test is skipped, saying why."""
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("interrupt_main reaches the main thread only, and only the main thread may set a SIGINT handler")
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous if previous is not None else signal.SIG_DFL)


def test_an_interrupt_of_the_explorer_stops_the_run_and_leaves_no_thread_running_the_schedule():
    with sigint_raises():
        _interrupt_the_explorer()


def _interrupt_the_explorer() -> None:
    gate = threading.Lock()  # real, made outside any run
    gate.acquire()
    running = threading.Event()

    def fn():
        running.set()
        gate.acquire()  # uncontrolled, and no watchdog to call it stuck: only an interrupt ends this

    def interrupt():
        running.wait(10)
        _thread.interrupt_main()

    timer = threading.Thread(target=interrupt, daemon=True)
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            _explore(fn, strategy="random", schedules=5, watchdog=None)
    finally:
        gate.release()
    timer.join(5)
    for t in _racecheck_threads():
        t.join(timeout=5)
    assert _racecheck_threads() == []
