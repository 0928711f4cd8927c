"""A run that cannot be unwound still cleans up what it created, and the failure says which thread and why, in
words that a replay of its token repeats byte for byte.

A controlled thread blocked on a real lock (created before the exploration, so racecheck does not control it), or
waiting on a child process that never answers past the external-wait bound, is reported as uncontrolled blocking
and left behind; its ``with tempfile.TemporaryDirectory()`` / ``NamedTemporaryFile()`` never exits and its
``finally`` never runs. The engine removes those directories and files after the run anyway, counts them in the
message ("removed 2 temporary directories, 2 temporary files") and lists the paths in ``failure.cleanup``.
"""

import functools
import os
import shutil
import subprocess
import sys
import tempfile
import threading

import pytest
import racecheck
from racecheck.runtime import cleanup

# The subject here is cleanup after runs that cannot be unwound, not memory:
# explored with memory=False (memory watching adds a warm-up run and steps of its own).
_explore = functools.partial(racecheck.explore, memory=False)

made: list[str] = []
gate = threading.Lock()  # a real lock: made before any exploration, racecheck does not control it


def stuck_with_temporary_directories_and_files():
    kept = tempfile.mkdtemp(prefix="racecheck-unwind-")
    made.append(kept)
    fd, loose = tempfile.mkstemp(prefix="racecheck-unwind-")
    os.close(fd)
    made.append(loose)
    try:
        with tempfile.TemporaryDirectory(prefix="racecheck-unwind-") as scratch, \
                tempfile.NamedTemporaryFile(prefix="racecheck-unwind-", suffix=".ckpt") as partial:
            made.extend([scratch, partial.name])
            partial.write(b"half")
            with open(os.path.join(scratch, "partial.ckpt"), "w") as f:
                f.write("half")
            gate.acquire()  # held by the test: blocks for real, no scheduling point ever again
            gate.release()
    finally:
        shutil.rmtree(kept, ignore_errors=True)
        os.unlink(loose)


def stuck_in_a_worker_thread():
    def worker():
        made.append(tempfile.mkdtemp(prefix="racecheck-unwind-"))
        gate.acquire()
        gate.release()

    t = threading.Thread(target=worker)
    t.start()
    t.join()


def _explore_stuck(fn, **options):
    made.clear()
    gate.acquire()
    try:
        return _explore(fn, strategy="random", schedules=1, seed=0, watchdog=0.3, shrink_budget=0,
                                 race_budget=0, **options)
    finally:
        gate.release()  # the stuck thread ends on its own now (a daemon; its own cleanup meets missing paths)


def _replay_stuck(fn, token):
    gate.acquire()
    try:
        return racecheck.replay(fn, token, watchdog=0.3)
    finally:
        gate.release()


def test_stuck_run_removes_its_temporary_directories_and_files_and_says_so():
    result = _explore_stuck(stuck_with_temporary_directories_and_files)
    failure = result.failure
    assert failure.kind == "uncontrolled-blocking"
    assert len(made) == 4
    for path in made:
        assert not os.path.exists(path), f"{path} left behind"
        assert path not in failure.message  # the paths differ between runs: never in the text
    assert ("[T0 could not be unwound (stuck in uncontrolled code); cleaned up after it: removed 2 temporary "
            "directories, 2 temporary files]") in failure.message
    assert sorted((c["kind"], c["path"], c["outcome"]) for c in failure.cleanup) == sorted(
        [("temporary directory", os.path.abspath(made[0]), "removed"),
         ("temporary file", os.path.abspath(made[1]), "removed"),
         ("temporary directory", os.path.abspath(made[2]), "removed"),
         ("temporary file", os.path.abspath(made[3]), "removed")]
    )
    assert "T0" in result.leaked_threads


def test_the_failure_and_its_replay_end_with_the_same_words():
    """The trace's last line carries the message: it used to hold random temp paths, so a failure and its replay
    differed; now the replay prints the same trace byte for byte."""
    failure = _explore_stuck(stuck_with_temporary_directories_and_files).failure
    first = list(made)
    made.clear()
    again = _replay_stuck(stuck_with_temporary_directories_and_files, failure.token).failure
    assert set(made).isdisjoint(first) and not any(os.path.exists(p) for p in made)  # other paths, also removed
    assert again.message == failure.message
    assert again.trace == failure.trace
    assert failure.trace.splitlines()[-1].endswith("removed 2 temporary directories, 2 temporary files]")


def test_stuck_worker_is_named():
    failure = _explore_stuck(stuck_in_a_worker_thread).failure
    assert failure.kind == "uncontrolled-blocking"
    assert len(made) == 1 and not os.path.exists(made[0])
    assert "T1 could not be unwound" in failure.message and "removed 1 temporary directory]" in failure.message
    assert failure.cleanup == [{"kind": "temporary directory", "path": os.path.abspath(made[0]),
                                "outcome": "removed"}]


def left_in_place():
    made.append(tempfile.mkdtemp(prefix="racecheck-unwind-"))
    fd, path = tempfile.mkstemp(prefix="racecheck-unwind-")
    os.close(fd)
    made.append(path)


def test_runs_that_unwind_leave_the_programs_directories_and_files_alone():
    """Cleanup after a leak only: a run whose threads all unwound ran its own cleanup, and what it chose to keep
    (a mkdtemp or mkstemp it returns or records) is not removed behind its back."""
    made.clear()
    try:
        result = _explore(left_in_place, strategy="random", schedules=5, seed=0)
        assert result.ok and result.exhausted and result.schedules == 1  # no decision: one schedule is the space
        assert len(made) == 2 and os.path.isdir(made[0]) and os.path.isfile(made[1])
    finally:
        shutil.rmtree(made[0], ignore_errors=True)
        os.unlink(made[1])


def test_tempfile_restored_after_exploration():
    real = (tempfile.mkdtemp, tempfile.mkstemp, getattr(tempfile, "_mkstemp_inner", None))
    _explore_stuck(stuck_in_a_worker_thread)
    assert (tempfile.mkdtemp, tempfile.mkstemp, getattr(tempfile, "_mkstemp_inner", None)) == real


def test_nothing_to_clean_is_reported_too():
    def stuck_plain():
        gate.acquire()
        gate.release()

    failure = _explore_stuck(stuck_plain).failure
    assert "T0 could not be unwound" in failure.message
    assert "nothing it created was left to clean up" in failure.message and failure.cleanup == []


def test_cleanup_words_count_by_kind_and_keep_plain_descriptions():
    done = [cleanup.Cleaned("temporary file", "/tmp/a", "removed"),
            cleanup.Cleaned("child process", "pid 7", "stopped"),
            cleanup.Cleaned("temporary directory", "/tmp/b", "removed"),
            cleanup.Cleaned("temporary file", "/tmp/c", "removed"),
            cleanup.Cleaned("temporary file", "/tmp/d", "failed: PermissionError: busy"),
            cleanup.Cleaned("closed the server socket", "", "removed")]
    assert cleanup.describe(done) == ("removed 1 temporary directory, 2 temporary files; stopped 1 child process; "
                                      "could not clean up 1 temporary file (see failure.cleanup); "
                                      "closed the server socket")
    assert cleanup.describe([]) == "nothing it created was left to clean up"


# ----- a wait on another process past its bound -------------------------------------------------------------------

children: list[subprocess.Popen] = []
SILENT_CHILD = [sys.executable, "-c", "import sys; sys.stdin.read()"]  # waits for input that never comes


def waits_on_a_child_that_never_answers():
    scratch = tempfile.mkdtemp(prefix="racecheck-unwind-")
    made.append(scratch)
    with tempfile.NamedTemporaryFile(prefix="racecheck-unwind-", dir=scratch, delete=False) as f:
        made.append(f.name)

    def waiter():
        child = subprocess.Popen(SILENT_CHILD, stdin=subprocess.PIPE)
        children.append(child)
        child.wait()  # the child waits for us, we wait for the child: never answers

    t = threading.Thread(target=waiter)
    t.start()
    t.join()
    shutil.rmtree(scratch)


def test_a_child_that_never_answers_is_uncontrolled_blocking_and_everything_is_cleaned_up():
    """The external wait is one traced step; past its bound (5 watchdogs: 1 s here) it is reported as a hang
    that says why, the waiting thread is left behind by teardown, its temp dir and file are removed and the child it
    started is stopped; with the child gone its wait returns and the left-behind thread ends by itself: nothing
    leaks into the next test. The replay says the same words."""
    made.clear()
    children.clear()
    before = set(threading.enumerate())
    result = _explore(waits_on_a_child_that_never_answers, strategy="random", schedules=1, seed=0,
                               watchdog=0.2, shrink_budget=0, race_budget=0)
    failure = result.failure
    assert failure is not None and failure.kind == "uncontrolled-blocking", result.summary()
    assert "T1 made no scheduling point for 1s, waiting in 'external subprocess wait'" in failure.message
    assert ("[T1 could not be unwound (stuck in uncontrolled code); cleaned up after it: removed 1 temporary "
            "directory, 1 temporary file; stopped 1 child process]") in failure.message
    assert "external subprocess wait" in failure.trace
    assert len(made) == 2 and not any(os.path.exists(p) for p in made)
    assert len(children) == 1 and children[0].poll() is not None  # killed by racecheck, not by this test
    assert sorted((c["kind"], c["path"], c["outcome"]) for c in failure.cleanup) == sorted(
        [("temporary directory", os.path.abspath(made[0]), "removed"),
         ("temporary file", os.path.abspath(made[1]), "removed"),
         ("child process", f"pid {children[0].pid}", "stopped")]
    )
    assert result.leaked_threads == ["T1"]
    for thread in set(threading.enumerate()) - before:
        thread.join(timeout=10)  # its child is gone, so its wait returns and the abandoned thread ends
        assert not thread.is_alive(), f"{thread.name} leaked into the next test"
    again = racecheck.replay(waits_on_a_child_that_never_answers, failure.token, watchdog=0.2).failure
    assert again.trace == failure.trace and children[1].poll() is not None


@pytest.fixture(autouse=True)
def _no_children_left():
    yield
    for child in children:
        if child.poll() is None:
            child.kill()
            child.wait()
