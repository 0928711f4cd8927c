"""Fair scheduling (CHESS, Musuvathi & Qadeer 2008): a thread that yields is waiting for someone else.

A spin lock whose waiters retry with ``time.sleep(0)`` is correct code. Leaving a yielding thread must cost no
preemption, and no strategy may keep rescheduling the spinner: before fairness, dfs ran the spinner forever
(choice 0 = "keep the current thread") and reported a livelock at the step limit.
"""

from __future__ import annotations

import functools
import threading
import time

import pytest
import racecheck

# The subject here is fair scheduling: the spin lock's test-and-set is atomic only while memory is not watched
# (watched, racecheck rightly finds it is not atomic in Python), so it is explored with memory=False.
_explore = functools.partial(racecheck.explore, memory=False)


def _spin_lock_program(buggy: bool):
    """Two workers increment a counter under a spin lock built from a flag and a ``sleep(0)`` retry loop.

    The correct lock tests and sets the flag with no scheduling point in between (atomic, like a CAS); the buggy
    one has a point between the test and the set, so both workers can enter and an increment is lost.
    """

    def program() -> None:
        state = {"locked": False, "n": 0}

        def lock() -> None:
            while True:
                if not state["locked"]:
                    if buggy:
                        racecheck.point("between test and set")
                    state["locked"] = True
                    return
                time.sleep(0)  # yield: let the holder make progress

        def worker() -> None:
            lock()
            value = state["n"]
            racecheck.point("inside the critical section")
            state["n"] = value + 1
            state["locked"] = False

        threads = [threading.Thread(target=worker) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert state["n"] == 2, f"lost update: n == {state['n']}"

    return program


correct_spin_lock = _spin_lock_program(buggy=False)
buggy_spin_lock = _spin_lock_program(buggy=True)


def test_dfs_exhausts_a_correct_spin_lock_at_bound_2():
    result = _explore(correct_spin_lock, strategy="dfs", preemption_bound=2, schedules=5000, max_steps=2000)
    assert result.ok, result.failure
    assert result.exhausted


@pytest.mark.parametrize("strategy", ["random", "pct"])
def test_random_and_pct_pass_a_correct_spin_lock(strategy):
    result = _explore(correct_spin_lock, strategy=strategy, schedules=300, seed=3, max_steps=2000,
                               skip_duplicates=False)
    assert result.ok, result.failure
    assert result.schedules == 300


@pytest.mark.parametrize("strategy", ["dfs", "random", "pct"])
def test_every_strategy_finds_the_buggy_spin_lock(strategy):
    result = _explore(buggy_spin_lock, strategy=strategy, schedules=2000, seed=0, max_steps=2000)
    assert not result.ok
    assert result.failure.kind == "exception"
    assert "lost update" in str(result.failure.exception)


def _spun_program():
    """Fails exactly when the second worker had to spin: the lock holder must be preempted once inside its
    critical section; the spinner's ``sleep(0)`` then hands control back for free."""

    def program() -> None:
        state = {"locked": False, "spins": 0}

        def worker() -> None:
            while state["locked"]:
                state["spins"] += 1
                time.sleep(0)
            state["locked"] = True
            racecheck.point("critical section")
            state["locked"] = False

        threads = [threading.Thread(target=worker) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert state["spins"] == 0, "a worker had to spin"

    return program


spun = _spun_program()


@pytest.mark.parametrize("strategy", ["dfs", "random", "pct"])
def test_leaving_a_yielding_thread_is_not_a_preemption(strategy):
    result = _explore(spun, strategy=strategy, schedules=500, seed=0, max_steps=2000)
    failure = result.failure
    assert failure is not None and "had to spin" in str(failure.exception)
    assert failure.preemptions == 1  # into the critical section; every switch away from a spinner is free
    events = [e for e in failure.events if e.switch != "info"]
    marks = [e.switch for e in events]
    assert marks.count("preempt") == 1
    for before, after in zip(events, events[1:], strict=False):
        if before.op == "sleep 0" and after.tid != before.tid:
            assert after.switch == "switch", failure.trace
    assert any(e.op == "sleep 0" for e in events)


def test_dfs_at_bound_1_exhausts_the_correct_spin_lock():
    """Spinning needs one preemption (into the holder's critical section); its yields add none, so bound 1 is a
    finite tree too."""
    result = _explore(correct_spin_lock, strategy="dfs", preemption_bound=1, schedules=5000, max_steps=2000)
    assert result.ok and result.exhausted


def test_a_spinner_waiting_on_a_sleeping_thread_lets_virtual_time_pass():
    """A ``sleep(0)`` loop waiting for a thread in a timed sleep is correct code: when only yielding threads can
    run, the virtual clock moves to the sleeper's deadline instead of spinning into the step limit."""

    def program() -> None:
        state = {"locked": True}

        def waiter() -> None:
            while state["locked"]:
                time.sleep(0)
            state["locked"] = True

        t = threading.Thread(target=waiter)
        t.start()
        time.sleep(1.0)
        state["locked"] = False
        t.join()
        assert state["locked"]

    for strategy in ("dfs", "random", "pct"):
        result = _explore(program, strategy=strategy, schedules=50, max_steps=500)
        assert result.ok, result.failure


def test_a_spinner_alone_still_spins_to_the_step_limit():
    """Fairness does not hide a real livelock: a spinner nobody will ever release hits the step limit."""

    def program() -> None:
        stop = {"flag": False}

        def spin() -> None:
            while not stop["flag"]:
                time.sleep(0)

        t = threading.Thread(target=spin)
        t.start()
        t.join()

    for strategy in ("dfs", "random", "pct"):
        result = _explore(program, strategy=strategy, schedules=5, max_steps=300)
        assert not result.ok
        assert result.failure.kind == "step-limit"
