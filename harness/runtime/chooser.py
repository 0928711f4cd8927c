"""What the scheduler asks at a decision: the one interface every strategy's per-execution chooser implements.

It lives in the runtime because the run consumes it; the strategies that implement it live in ``racecheck.search``.
"""

from __future__ import annotations

from collections.abc import Sequence

__racecheck_engine__ = True


class Chooser:
    """One execution's source of decisions."""

    def pick_thread(
        self, enabled: Sequence[int], current_enabled: bool, yielding: bool, current: int | None = None
    ) -> int:
        """Index into ``enabled`` (logical thread ids; ``enabled[0]`` is the current thread if current_enabled).

        ``yielding``: the current thread just yielded (``sleep``, a polling retry); the scheduler has already left it
        out of ``enabled`` while anyone else can run (fair scheduling), so leaving it is never a preemption.
        ``current``: the logical id of the thread at the scheduling point, None when it is exiting.
        """
        raise NotImplementedError

    def pick_value(self, n: int, label: str) -> int:
        raise NotImplementedError
