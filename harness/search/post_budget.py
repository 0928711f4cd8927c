"""How much work a failure's report may cost: shrinking and naming the racing pair get a budget that scales with what
finding the failure cost.

A user waits for the report, not for the find: a failure found in four seconds should not take minutes to shrink.
Work is counted in scheduling steps run (``Session.steps_run``), not in seconds, so the same exploration shrinks to
the same schedule and names the same pair on any machine and under any load (a budget on the clock would make the
report depend on the machine's speed); a replay of the same program costs about what its exploration's runs cost per
step, so steps are time up to that program's own cost per step. Shrinking may run as many steps as the exploration
ran up to the failure, and naming the pair what is left of ``FACTOR`` times that, so the two together stay within
``FACTOR`` times the find; each phase has ``FLOOR`` steps at least, so small programs keep the full shrink and pair
search they always had: the classic bugs' (``tests/engine/classic_bugs.py``, runs of 5-25 steps) take 50-3,300 steps
under pct, random and pos, found in 15-600. The floor was 20,000 steps, which let a failure found in
458 steps (a spinning program) shrink for 20,000 (0.2 s, where finding it took 0.02 s) and a library race found in
1,260 (urllib3's, 200-step runs) for 20,000 (1.5-1.9 s against 0.1-0.2 s): so a report can still take longer than
``FACTOR`` times its find, by at most ``FLOOR`` steps per phase, a few tens of milliseconds on a small program. One
run of either phase stops at ``PROBE_FACTOR`` times the failing run's steps, ``PROBE_FLOOR`` at least (``capped``):
a probe that spins must not spend the budget alone. Where a phase stops on its budget, the report says so
(``Failure.notes``). The probe counts of ``shrink_budget`` and ``race_budget`` still cap each phase too.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from racecheck.runtime.scheduler import Run

__racecheck_engine__ = True

FACTOR = 2  # the post-failure phases together may run this many times the steps it took to find the failure
FLOOR = 4_000  # steps every phase may run, however quickly the failure was found
PROBE_FACTOR = 4  # one post-failure run may take this many times the failing run's steps ...
PROBE_FLOOR = 2_000  # ... or this many, whichever is more (a swap of the leak pair in stock Lightning needs ~650)


class WorkBudget:
    """One phase's budget in steps run (``share`` of the ``found`` steps the find cost, or the floor): ``more()`` says
    whether another run fits, and remembers when it did not."""

    def __init__(self, meter: Callable[[], int], found: int, share: int, floor: int = FLOOR) -> None:
        self.meter = meter
        self.start = meter()
        self.limit = max(floor, share)
        self.found = found
        self.cut = False

    @property
    def spent(self) -> int:
        return self.meter() - self.start

    def more(self) -> bool:
        if self.spent < self.limit:
            return True
        self.cut = True
        return False

    @property
    def left(self) -> int:
        return max(0, self.limit - self.spent)

    def words(self) -> str:
        """What the budget was, for a report's note."""
        return f"{self.spent} steps run, the budget {self.limit} steps (finding it took {self.found})"


def unbounded() -> WorkBudget:
    """A budget that never runs out (a replay's judging, where nothing was explored to scale it by)."""
    return WorkBudget(lambda: 0, 0, 1 << 62)


@contextmanager
def capped(session: Any, work: WorkBudget, original: Any) -> Iterator[int]:
    """One run of ``session`` stopped at ``PROBE_FACTOR`` times the steps of the failing run ``original`` (at least
    ``PROBE_FLOOR``), and at what is left of ``work``, never above its own ``max_steps``: a shrink probe or a swap
    that spins (a busy-wait loop the change let run on) would otherwise spend the whole step limit in one run, 10x a
    small budget. Such a run ends as a step-limit failure (``cut_by``), which decides nothing: the shrinker keeps the
    schedule it had, the pair search counts the swap as undecided (never as "still fails", nor as "passes") and says
    so in its note; a failure that is itself a step-limit (a livelock) keeps the full limit, or a cut run would look
    the same as it. Yields the cap."""
    saved, read = session.run_config, session.races_read
    cap = saved.max_steps
    if original.failure is None or original.failure.kind != "step-limit":
        cap = max(1, min(cap, work.left, max(PROBE_FLOOR, PROBE_FACTOR * original.steps)))
    session.run_config = dataclasses.replace(saved, max_steps=cap)
    session.races_read = False  # a probe's or a swap's data races are never reported: no finder (~15% of a step)
    try:
        yield cap
    finally:
        session.run_config, session.races_read = saved, read


def cut_by(run: Run, limit: int) -> bool:
    """Whether ``run`` ended at a cap ``capped`` set, below the exploration's own step limit ``limit``."""
    failure = run.failure
    return failure is not None and failure.kind == "step-limit" and run.steps <= limit
