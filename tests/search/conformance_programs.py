"""The small programs the strategy conformance suite (``test_strategy_conformance.py``) runs every strategy on.

Racy and correct ones, each small enough that unbounded dfs runs its whole space in well under a second: a lost
update made of named points and its locked fix, a lock-order deadlock (from ``tests/engine/classic_bugs.py``), a
lost update on plain shared memory that only memory watching sees, an order violation on it that needs no
preemption, a check-then-create race on the fake
filesystem (``fs="posix"``), a program that reaches a function of another module in some schedules only, so that
code comes under memory watch in the middle of an exploration and the schedule is run again (``Run.stale``), and
a hand-over through an event waited on with a timeout. Every program is a module-level function, so that its
tokens name it in any process.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from racecheck import fakefs

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "engine"))
import classic_bugs  # noqa: E402
import conformance_late  # noqa: E402

_run_all = classic_bugs.run_all


class Counter:
    def __init__(self) -> None:
        self.n = 0


def memory_lost_update() -> None:
    """Two threads increment an attribute with no lock and no point: only memory watching sees the race."""
    counter = Counter()

    def increment() -> None:
        value = counter.n
        counter.n = value + 1

    _run_all(increment, increment)
    assert counter.n == 2, f"lost update: n is {counter.n}"


class Box:
    def __init__(self) -> None:
        self.ready = False


def order_violation() -> None:
    """A reader that assumes the writer ran first: it fails with no preemption at all, when the reader is the one
    that runs at the main thread's join."""
    box = Box()

    def writer() -> None:
        box.ready = True

    def reader() -> None:
        assert box.ready, "read before it was written"

    _run_all(writer, reader)


def create_race() -> None:
    """Two threads create the same file after checking that it is not there: the second ``open(..., "x")`` fails
    when both checked before either created it. (It writes nothing: a write to the file object is a memory point of
    its own, ``control.handoff_streams``, and would take this small space past the suite's budget.)"""
    path = fakefs.root() + "/lock.pid"

    def claim() -> None:
        if not os.path.exists(path):
            os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY))

    _run_all(claim, claim)


def late_reach() -> None:
    """A reader that sees the flag unset calls into ``conformance_late``, which no earlier run reached: the warm-up
    run (every thread kept running) sees it set, so the first schedule that takes the branch brings that module
    under memory watch as it runs, and is run again (``Run.stale``)."""
    state = {"flag": False, "seen": []}

    def writer() -> None:
        state["flag"] = True

    def reader() -> None:
        if not state["flag"]:
            conformance_late.remember(state["seen"], "early")

    _run_all(writer, reader)


def timed_handoff() -> None:
    """A consumer waits for an event with a timeout, which on virtual time passes only when nothing else can run:
    the producer always sets it first, so no schedule fails (a strategy that made waits time out by itself would
    fail it, in a way no replay of its decisions repeats). The main thread takes a lock of its own before joining,
    so that decisions are taken while the consumer waits."""
    ready, own = threading.Event(), threading.Lock()

    def consumer() -> None:
        assert ready.wait(timeout=5.0), "the wait timed out"

    threads = [threading.Thread(target=consumer), threading.Thread(target=ready.set)]
    for t in threads:
        t.start()
    with own:
        pass
    for t in threads:
        t.join()


@dataclass(frozen=True)
class Program:
    """A program of the suite: its function, the options it is explored and replayed with, whether it can fail."""

    name: str
    fn: Callable[[], None]
    racy: bool
    options: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)


PROGRAMS: tuple[Program, ...] = (
    Program("lost_update", classic_bugs.lost_update, racy=True),
    Program("lost_update_fixed", classic_bugs.lost_update_fixed, racy=False),
    Program("lock_order_deadlock", classic_bugs.lock_order_deadlock, racy=True),
    Program("memory_lost_update", memory_lost_update, racy=True),
    Program("order_violation", order_violation, racy=True),
    Program("create_race", create_race, racy=True, options={"fs": "posix"}),
    Program("late_reach", late_reach, racy=False),
    Program("timed_handoff", timed_handoff, racy=False),
)
BY_NAME = {program.name: program for program in PROGRAMS}
