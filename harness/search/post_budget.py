"""How much work a failure's report may cost: shrinking and naming the racing pair each get a budget that scales
with what finding the failure cost.

A user waits for the report, not for the find: a failure found in four seconds should not take minutes to shrink.
Work is counted in scheduling steps run (``Session.steps_run``), not in seconds, so the same exploration shrinks to
the same schedule and names the same pair on any machine and under any load (a budget on the clock would make the
report depend on the machine's speed); a replay of the same program costs about what its exploration's runs cost per
step, so steps are time up to that program's own cost per step. Each phase may run ``FACTOR`` times the steps the
exploration ran up to the failure, and never less than ``FLOOR`` steps, so small programs keep the full shrink and
pair search they always had (300 probes of a 60-step run fit in it). Where a phase stops on it, the report says so
(``Failure.notes``). The probe counts of ``shrink_budget`` and ``race_budget`` still cap each phase too.
"""

from __future__ import annotations

from collections.abc import Callable

__racecheck_engine__ = True

FACTOR = 2  # each post-failure phase may run this many times the steps it took to find the failure
FLOOR = 20_000  # steps every phase may run, however quickly the failure was found


class WorkBudget:
    """One phase's budget in steps run: ``more()`` says whether another run fits, and remembers when it did not."""

    def __init__(self, meter: Callable[[], int], found: int, factor: int = FACTOR, floor: int = FLOOR) -> None:
        self.meter = meter
        self.start = meter()
        self.limit = max(floor, factor * found)
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

    def words(self) -> str:
        """What the budget was, for a report's note."""
        return f"{self.spent} steps run, the budget {self.limit} ({FACTOR}x the {self.found} steps it took to find it)"


def unbounded() -> WorkBudget:
    """A budget that never runs out (a replay's judging, where nothing was explored to scale it by)."""
    return WorkBudget(lambda: 0, 0, floor=1 << 62)
