"""The live display of ``racecheck run`` and ``racecheck gate``: a progress bar of schedules, distinct
interleavings and races so far, fed by the engine's snapshots and by finished units.

Not to be confused with :class:`racecheck.search.coverage.Progress`, the engine's per-schedule snapshot this display
reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from racecheck.frontends import parallel
from racecheck.frontends.live import Throttle
from racecheck.report.words import count

__racecheck_engine__ = True


class LiveProgress:
    """Live coverage while ``racecheck run`` explores: schedules, distinct interleavings and races so far, as a
    rich progress bar on an interactive stderr (silent otherwise, and with ``--quiet``).

    The counts come from the engine's ``progress=`` snapshots (every schedule, when units run in this process)
    and from each finished unit (the authority, and the only source when units run in other processes).
    Interleavings are counted per cell as the union of the keys its chunks saw."""

    def __init__(self, requested: Sequence[int], enabled: bool, console: Any = None) -> None:
        self.bar = None
        self.requested = list(requested)  # schedules asked for, per cell
        self.total = sum(self.requested)
        self.failed_cells: set[int] = set()
        self.live: dict[tuple[int, int], int] = {}  # (cell, chunk) -> schedules run so far
        self.keys: dict[int, set[str]] = {}  # cell -> interleaving keys seen
        self.exhausted_at: dict[int, int] = {}  # cell -> the chunk that ran its whole space
        self.throttle = Throttle()  # redraws at most a few times a second (display only)
        if not enabled:
            return
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
        from rich.progress import Progress as Bar

        console = console or Console(stderr=True)
        if not console.is_terminal:
            return
        self.bar = Bar(
            TextColumn("exploring"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("schedules, {task.fields[interleavings]}, {task.fields[rate]:.0f}/s, {task.fields[failures]}"),
            TimeElapsedColumn(),
            console=console,
            auto_refresh=False,  # redrawn from the exploring thread: no extra thread beside controlled runs
            transient=True,
        )
        self.task = self.bar.add_task("explore", total=self.total, rate=0.0, failures="0 races",
                                      interleavings="0 interleavings")
        self.bar.start()

    @property
    def done(self) -> int:
        return sum(self.live.values())

    @property
    def interleavings(self) -> int:
        return sum(len(keys) for keys in self.keys.values())

    @property
    def failures(self) -> int:
        return len(self.failed_cells)

    def schedule(self, unit: dict, snapshot: Any) -> None:
        """After every schedule of a unit run in this process (an engine ``Progress`` snapshot)."""
        if self._beyond(unit):
            return
        self.live[(unit["cell"], unit["chunk"])] = snapshot.schedules
        self.keys.setdefault(unit["cell"], set()).add(snapshot.interleaving)
        if snapshot.failed:
            self.failed_cells.add(unit["cell"])
        self._draw(force=False)

    def update(self, unit: dict, result: dict) -> None:
        """After a whole unit, wherever it ran."""
        if self._beyond(unit):
            return
        self.live[(unit["cell"], unit["chunk"])] = result["schedules"]
        self.keys.setdefault(unit["cell"], set()).update(result.get("interleaving_keys", ()))
        if result.get("failures"):
            self.failed_cells.add(unit["cell"])  # a race per cell, however many of its chunks failed
        if result.get("exhausted"):  # the cell's space is done: what it did not need leaves the total
            cell, chunk = unit["cell"], unit["chunk"]
            self.exhausted_at[cell] = chunk
            for key in [k for k in self.live if k[0] == cell and k[1] > chunk]:
                del self.live[key]  # ran beside it in another process: not part of the answer
            ran = sum(n for (c, _), n in self.live.items() if c == cell)
            self.total -= self.requested[cell] - ran
            self.requested[cell] = ran
        self._draw(force=True)

    def _beyond(self, unit: dict) -> bool:
        """A chunk after the one that exhausted its cell (run concurrently elsewhere): adds nothing."""
        return unit["chunk"] > self.exhausted_at.get(unit["cell"], unit["chunk"])

    def _draw(self, force: bool) -> None:
        if self.bar is None:
            return
        if not self.throttle.due(force):
            return
        rate = self.throttle.rate(self.done)
        self.bar.update(self.task, total=self.total, completed=self.done, rate=rate,
                        failures=count(self.failures, "race"), interleavings=count(self.interleavings, "interleaving"))
        self.bar.refresh()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


def explore(cells: list[parallel.Cell], jobs: int, tx: Sequence[str], budget: float | None, quiet: bool):
    """Explore ``cells`` (:func:`racecheck.frontends.parallel.explore_cells`) with the live display on stderr."""
    progress = LiveProgress([c.schedules for c in cells], enabled=not quiet)
    try:
        return parallel.explore_cells(cells, jobs=jobs, tx=tx, time_budget=budget, progress=progress.update,
                                      on_schedule=progress.schedule)
    finally:
        progress.close()
