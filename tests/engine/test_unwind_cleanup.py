"""A run that cannot be unwound still cleans up what it created, and the failure says which thread and what.

A controlled thread blocked on a real lock (created before the exploration, so racecheck does not control it) is
reported as uncontrolled blocking and left behind; its ``with tempfile.TemporaryDirectory()`` never exits and its
``finally: shutil.rmtree(...)`` never runs. The engine removes those directories after the run anyway.
"""

import os
import shutil
import tempfile
import threading

import racecheck

made: list[str] = []
gate = threading.Lock()  # a real lock: made before any exploration, racecheck does not control it


def stuck_with_temporary_directories():
    kept = tempfile.mkdtemp(prefix="racecheck-unwind-")
    made.append(kept)
    try:
        with tempfile.TemporaryDirectory(prefix="racecheck-unwind-") as scratch:
            made.append(scratch)
            with open(os.path.join(scratch, "partial.ckpt"), "w") as f:
                f.write("half")
            gate.acquire()  # held by the test: blocks for real, no scheduling point ever again
            gate.release()
    finally:
        shutil.rmtree(kept, ignore_errors=True)


def stuck_in_a_worker_thread():
    def worker():
        made.append(tempfile.mkdtemp(prefix="racecheck-unwind-"))
        gate.acquire()
        gate.release()

    t = threading.Thread(target=worker)
    t.start()
    t.join()


def _explore_stuck(fn):
    made.clear()
    gate.acquire()
    try:
        return racecheck.explore(fn, strategy="random", schedules=1, seed=0, watchdog=0.3, shrink_budget=0,
                                 race_budget=0)
    finally:
        gate.release()  # the stuck thread ends on its own now (a daemon; its own cleanup meets missing dirs)


def test_stuck_run_removes_its_temporary_directories_and_says_so():
    result = _explore_stuck(stuck_with_temporary_directories)
    failure = result.failure
    assert failure.kind == "uncontrolled-blocking"
    assert len(made) == 2
    for path in made:
        assert not os.path.exists(path), f"{path} left behind"
        assert f"removed temporary directory {os.path.abspath(path)}" in failure.message
    assert "T0 could not be unwound" in failure.message
    assert "T0" in result.leaked_threads


def test_stuck_worker_is_named():
    failure = _explore_stuck(stuck_in_a_worker_thread).failure
    assert failure.kind == "uncontrolled-blocking"
    assert len(made) == 1 and not os.path.exists(made[0])
    assert "T1 could not be unwound" in failure.message and made[0] in failure.message


def left_in_place():
    made.append(tempfile.mkdtemp(prefix="racecheck-unwind-"))


def test_runs_that_unwind_leave_the_programs_directories_alone():
    """Cleanup after a leak only: a run whose threads all unwound ran its own cleanup, and what it chose to keep
    (a mkdtemp it returns or records) is not removed behind its back."""
    made.clear()
    try:
        assert racecheck.explore(left_in_place, strategy="random", schedules=2, seed=0).ok
        assert len(made) == 2 and all(os.path.isdir(p) for p in made)
    finally:
        for path in made:
            shutil.rmtree(path, ignore_errors=True)


def test_mkdtemp_restored_after_exploration():
    real = tempfile.mkdtemp
    _explore_stuck(stuck_in_a_worker_thread)
    assert tempfile.mkdtemp is real


def test_nothing_to_clean_is_reported_too():
    def stuck_plain():
        gate.acquire()
        gate.release()

    failure = _explore_stuck(stuck_plain).failure
    assert "T0 could not be unwound" in failure.message
    assert "nothing it created was left to clean up" in failure.message
