"""The random walk (``strategy="random"``): a uniform choice among the runnable threads at every decision."""

from __future__ import annotations

import random

from racecheck.runtime.chooser import Chooser
from racecheck.search.strategy import Strategy

__racecheck_engine__ = True


class RandomChooser(Chooser):
    """One random-walk execution: every thread pick and every value drawn uniformly from ``rng``."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def pick_thread(self, decision):
        return self.rng.randrange(len(decision.enabled))

    def pick_value(self, n, label):
        return self.rng.randrange(n)


class RandomWalk(Strategy):
    """Uniform choice among enabled threads at every step: a strong, cheap baseline (SCTBench)."""

    name = "random"

    def new_execution(self, index):
        return RandomChooser(self.stream(f"random:{self.seed}:{index}"))
