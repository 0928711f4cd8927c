"""Calls that wait on other processes are one traced step, not "uncontrolled blocking".

A child process that takes longer than the watchdog used to end the run as uncontrolled blocking; now the wait is
an "external" step, the run completes, its trace and token replay, and the race between the controlled threads
around it is still found. Uncontrolled threads calling the same functions get the real ones, and everything is
restored afterwards.
"""

import multiprocessing
import subprocess
import sys
import threading

import racecheck
from racecheck import external, scheduler

SLOW_CHILD = [sys.executable, "-c", "import time; time.sleep(0.35); print('done')"]


def waits_for_a_slow_child():
    out = subprocess.run(SLOW_CHILD, capture_output=True, text=True, check=True).stdout
    assert out.strip() == "done"


def _fails_after_child():
    waits_for_a_slow_child()
    raise RuntimeError("after the child")


def test_slow_child_is_one_external_step_not_uncontrolled_blocking(monkeypatch):
    result = racecheck.explore(waits_for_a_slow_child, schedules=1, watchdog=0.2)
    assert result.ok, result.failure
    failure = racecheck.explore(_fails_after_child, schedules=1, watchdog=0.2).failure
    assert failure.kind == "exception" and "external subprocess communicate" in failure.trace
    again = racecheck.replay(_fails_after_child, failure.token, watchdog=0.2)
    assert again.failure.trace == failure.trace

    monkeypatch.setattr(external, "TARGETS", [])  # what it was before: the watchdog calls the wait a hang
    before = racecheck.explore(waits_for_a_slow_child, schedules=1, watchdog=0.2)
    assert before.failure.kind == "uncontrolled-blocking"


def _child_sends(conn):
    import time

    time.sleep(0.35)
    conn.send("hello")
    conn.close()


def pipe_and_race():
    """A pipe read from a real child process, next to a lost update between two controlled threads."""
    parent, child = multiprocessing.Pipe()
    process = multiprocessing.get_context("fork").Process(target=_child_sends, args=(child,))
    process.start()
    state = {"n": 0, "got": None}

    def reader():
        state["got"] = parent.recv()

    def bump():
        value = state["n"]
        racecheck.point("between read and write")
        state["n"] = value + 1

    threads = [threading.Thread(target=reader), threading.Thread(target=bump), threading.Thread(target=bump)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    process.join()
    assert state["got"] == "hello"
    assert state["n"] == 2, f"lost update: {state['n']}"


def test_pipe_from_a_child_process_and_the_race_beside_it():
    result = racecheck.explore(pipe_and_race, strategy="pct", schedules=30, seed=0, watchdog=0.2, shrink_budget=5,
                               race_budget=0)
    assert not result.ok and "lost update" in result.failure.message, result.failure
    assert "external connection recv" in result.failure.trace


def test_uncontrolled_callers_get_the_real_calls_and_everything_is_restored():
    before = (subprocess.Popen.wait, subprocess.Popen.communicate, multiprocessing.connection.wait)
    with external.waiting_outside():
        assert subprocess.Popen.wait is not before[0]
        out = subprocess.run([sys.executable, "-c", "print(3)"], capture_output=True, text=True).stdout
        assert out.strip() == "3"  # this thread is not controlled: a plain call
    assert (subprocess.Popen.wait, subprocess.Popen.communicate, multiprocessing.connection.wait) == before
    assert "recv" not in vars(__import__("socket").socket)


def waits_too_long():
    subprocess.run([sys.executable, "-c", "import time; time.sleep(1.5)"], check=True)


def test_a_wait_on_another_process_is_still_bounded(monkeypatch):
    """Waiting outside keeps the baton, so a child that needs a controlled thread would wait forever: past a
    bound (max(15 watchdogs, 30 s); shortened here) it is reported as a hang that says why."""
    monkeypatch.setattr(scheduler, "outside_limit", lambda watchdog: 0.4)
    failure = racecheck.explore(waits_too_long, schedules=1, watchdog=0.1).failure
    assert failure is not None and failure.kind == "uncontrolled-blocking"
    assert "waited on another process for over 0.4s" in failure.message
