"""Choosers that record what each decision hands them (``tests/engine/test_decision_finished.py``). A chooser runs
at the run's decisions, inside its controlled threads: engine code, never watched itself."""

import random

from racecheck.search.random_walk import RandomChooser

__racecheck_engine__ = True


class FinishedRecorder(RandomChooser):
    """A random walk that reads the steps finished since the last decision at every ``every``-th decision (thread
    or value): (kind, the range handed, the steps read, or None where it did not read)."""

    def __init__(self, seed: int, every: int = 1) -> None:
        super().__init__(random.Random(seed))
        self.every = every
        self.view = None
        self.seen: list[tuple[str, range, list | None]] = []

    def begin(self, view):
        self.view = view

    def _read(self, kind, finished, steps):
        self.seen.append((kind, finished, steps() if len(self.seen) % self.every == 0 else None))

    def pick_thread(self, decision):
        assert decision.finished == self.view.finished  # the view says the same during the decision
        self._read("thread", decision.finished, decision.steps_finished)
        return super().pick_thread(decision)

    def pick_value(self, n, label):
        self._read("value", self.view.finished, self.view.steps_finished)
        return super().pick_value(n, label)
