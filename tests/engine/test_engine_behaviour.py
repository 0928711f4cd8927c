"""Engine guarantees: nothing leaks between runs, hangs become reports, same token same trace in any process."""

import os
import queue
import subprocess
import sys
import textwrap
import threading
import time

import classic_bugs
import pytest
import racecheck
from racecheck import sync
from racecheck.control import sync_facades


def _controlled_threads_alive():
    return [t for t in threading.enumerate() if hasattr(t, "_racecheck_record") or t.name.startswith("racecheck-")]


def test_patched_names_are_restored_after_a_failing_run():
    before = dict(vars(classic_bugs))
    start, join = threading.Thread.start, threading.Thread.join
    result = racecheck.explore(classic_bugs.lock_order_deadlock, strategy="random", schedules=100)
    assert not result.ok and result.failure.kind == "deadlock"
    assert classic_bugs.threading is threading and classic_bugs.queue is queue
    assert vars(classic_bugs).keys() == before.keys()
    assert all(vars(classic_bugs)[k] is v for k, v in before.items())
    assert threading.Thread.start is start and threading.Thread.join is join
    # and the names really were swapped during the run
    seen = {}

    def spy():
        seen["threading"] = globals()["threading"]
        seen["lock"] = threading.Lock()

    racecheck.explore(spy, schedules=1)
    assert seen["threading"] is sync_facades.threading_facade
    assert isinstance(seen["lock"], sync.ControlledLock)
    assert globals()["threading"] is threading


def test_no_thread_leaks_after_1000_runs():
    baseline = threading.active_count()
    result = racecheck.explore(classic_bugs.lost_update_fixed, strategy="random", schedules=1000,
                               skip_duplicates=False)
    assert result.ok and result.schedules == 1000
    for _ in range(20):  # failing runs tear down too
        assert not racecheck.explore(classic_bugs.lock_order_deadlock, strategy="random", schedules=50).ok
    assert threading.active_count() == baseline
    assert _controlled_threads_alive() == []


def test_deadlock_report_names_who_waits_on_what():
    failure = racecheck.explore(classic_bugs.lock_order_deadlock, strategy="pct", schedules=200).failure
    assert isinstance(failure.exception, racecheck.Deadlock)
    text = str(failure.exception)
    assert "T1 waits: acquire Lock#" in text and "T2 waits: acquire Lock#" in text
    assert "classic_bugs.py" in text


def test_uncontrolled_blocking_is_reported_not_hung():
    real_lock = threading.Lock()  # created outside any run: a real lock racecheck cannot see
    real_lock.acquire()

    def blocks_on_real_lock():
        real_lock.acquire()

    started = time.monotonic()
    # memory=False: one run blocks (memory watching's warm-up run would block on the real lock too, and a single
    # release below would leave one of the two abandoned threads behind)
    result = racecheck.explore(blocks_on_real_lock, schedules=1, watchdog=1.0, memory=False)
    elapsed = time.monotonic() - started
    real_lock.release()  # lets the abandoned thread finish
    assert result.failure.kind == "uncontrolled-blocking"
    assert isinstance(result.failure.exception, racecheck.UncontrolledBlocking)
    assert "test_engine_behaviour.py" in str(result.failure.exception)
    assert elapsed < 10


def test_livelock_hits_the_step_limit():
    def spin():
        flag = threading.Event()
        while not flag.is_set():
            pass

    result = racecheck.explore(spin, schedules=1, max_steps=500)
    assert isinstance(result.failure.exception, racecheck.StepLimitExceeded)


def test_sleep_and_timeouts_use_the_virtual_clock():
    def timed():
        start = time.monotonic()
        time.sleep(3600)
        event = threading.Event()
        assert event.wait(timeout=60) is False
        assert time.monotonic() - start == pytest.approx(3660)

    wall = time.monotonic()
    result = racecheck.explore(timed, strategy="random", schedules=5)
    assert result.ok, result.failure
    assert time.monotonic() - wall < 5


def test_explicit_point_is_a_no_op_outside_a_run():
    racecheck.point("nothing happens")


def test_same_token_same_trace_in_another_process():
    failure = racecheck.explore(classic_bugs.futures_order_violation, strategy="pct", schedules=500).failure
    here = os.path.dirname(__file__)
    script = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {here!r})
        import classic_bugs, racecheck
        print(racecheck.replay(classic_bugs.futures_order_violation, {failure.token!r}).failure.trace, end="")
        """
    )
    env = dict(os.environ, PYTHONHASHSEED="12345")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True)
    assert out.stdout == failure.trace


def test_trace_is_a_per_thread_table_with_preemptions_marked():
    failure = racecheck.explore(classic_bugs.lost_update, strategy="random", schedules=100).failure
    lines = failure.trace.splitlines()
    assert lines[0].split("|")[1].strip() == "T0"
    assert [c.strip() for c in lines[0].split("|")[1:]] == ["T0", "T1", "T2"]
    assert sum(1 for line in lines if line[5:7] == ">>") == failure.preemptions == 1
    assert any("point between read and write  @classic_bugs.py:" in line for line in lines)


def test_a_finished_schedule_leaves_no_reference_cycle_behind():
    """Each schedule's run, thread records and trace are freed by reference counting once the explorer drops
    them: a cycle per schedule would wake the garbage collector every few schedules (issue 9's throughput)."""
    import gc

    from racecheck.runtime.records import ThreadRecord
    from racecheck.runtime.scheduler import Run
    from racecheck.runtime.trace import TraceEvent

    def fn():
        box = []
        t = threading.Thread(target=lambda: box.append(1))
        t.start()
        t.join()
        with threading.Lock():
            pass

    racecheck.explore(fn, schedules=3)  # warm: imports and caches allocate their own once
    gc.collect()
    was = gc.isenabled()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        result = racecheck.explore(fn, schedules=20, skip_duplicates=False)
        gc.collect()
        engine = [o for o in gc.garbage if isinstance(o, (Run, ThreadRecord, TraceEvent))]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if was:
            gc.enable()
    assert result.ok and result.schedules == 20
    assert engine == []


def test_a_lock_of_a_run_released_outside_it_raises_and_is_not_traced():
    """``Lock.release`` goes through ``Run.effect``: a thread outside the run (here the test's own, after the
    exploration) gets the engine's error instead of a release slipped silently into a finished run's trace."""
    kept = {}

    def leaves_a_lock_held():
        lock = threading.Lock()
        lock.acquire()
        kept["lock"] = lock

    result = racecheck.explore(leaves_a_lock_held, strategy="dfs", schedules=1)
    assert result.ok
    lock = kept["lock"]
    before = len(lock._run.trace)
    with pytest.raises(RuntimeError, match="outside its run"):
        lock.release()
    assert len(lock._run.trace) == before and lock.locked()
