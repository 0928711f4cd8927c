"""Whether a failure depends on the schedule at all: the not-a-race check.

A failing schedule is reported as a race only when its order matters. A test that fails whatever the threads do
(a target the framework refuses outright, a missing file, a wrong assertion) would otherwise read "RACE FOUND at
schedule #0, 0 preemptions": a configuration error presented as a race. So a failure whose racing pair was not
named (a named pair already shows that another order makes it go away), and whose exploration has not already run
a schedule that did not fail this way, is run again under a few fixed schedules chosen to disagree with each other:
the non-preemptive one (the current thread keeps running), strict priority to the newest thread and to the oldest,
and a few seeded random walks. When every one of them fails the same way (same kind, exception type and raising
line), the failure does not depend on the schedule: ``Failure.depends_on_schedule`` is False and the front ends say
"fails under every schedule tried: not a race".

The probes are fixed (never drawn from the exploration's seed), so the verdict is the same in every exploration
and replay of the same test.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from racecheck.runtime.chooser import Chooser, Decision

__racecheck_engine__ = True

NOT_A_RACE = "fails under every schedule tried: not a race"
RANDOM_SEEDS = (1, 2, 3)  # a few, so that the check costs a handful of runs per failure


class KeepRunning(Chooser):
    """The non-preemptive schedule: the current thread runs until it blocks or ends, then the oldest runnable
    thread; every value is 0 (no fault, no crash)."""

    def pick_thread(self, decision: Decision) -> int:
        return 0

    def pick_value(self, n: int, label: str) -> int:
        return 0

    def fresh(self) -> Chooser:
        return type(self)()


class Newest(KeepRunning):
    """Strict priority to the newest thread: whenever the most recently started runnable thread can run, it does,
    so work handed to another thread is done before its caller goes on."""

    def pick_thread(self, decision: Decision) -> int:
        enabled = decision.enabled
        return max(range(len(enabled)), key=enabled.__getitem__)


class Oldest(KeepRunning):
    """Strict priority to the oldest thread: the test's own thread runs whenever it can, its helpers only when it
    waits for them."""

    def pick_thread(self, decision: Decision) -> int:
        enabled = decision.enabled
        return min(range(len(enabled)), key=enabled.__getitem__)


class Seeded(KeepRunning):
    """A random walk with a fixed seed (values stay 0: the probes vary the order only)."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.rng = random.Random(f"racecheck-not-a-race:{seed}")

    def pick_thread(self, decision: Decision) -> int:
        return self.rng.randrange(len(decision.enabled))

    def fresh(self) -> Chooser:
        return Seeded(self.seed)


def probes() -> list[Chooser]:
    """The schedules the check tries, in order (fresh choosers: each is used for one run)."""
    return [KeepRunning(), Newest(), Oldest(), *(Seeded(seed) for seed in RANDOM_SEEDS)]


def depends_on_schedule(execute: Callable[[Chooser], Any], fails_same: Callable[[Any], bool]) -> tuple[bool, int]:
    """Run the probes until one does not fail the same way. ``execute(chooser)`` runs one schedule and returns the
    run; ``fails_same(run)`` says whether it failed as the failure under test did. Returns (depends, runs spent):
    False only when every probe failed the same way."""
    spent = 0
    for chooser in probes():
        spent += 1
        if not fails_same(execute(chooser)):
            return True, spent
    return False, spent
