"""The random walk (``strategy="random"``): a uniform choice among the runnable threads at every decision where a
switch can matter."""

from __future__ import annotations

import random

from racecheck.runtime.chooser import Chooser
from racecheck.search.shared_memory import SharedMemory
from racecheck.search.strategy import Strategy

__racecheck_engine__ = True


class RandomChooser(Chooser):
    """One random-walk execution: every thread pick and every value drawn uniformly from ``rng``, except where the
    running thread's next step touches only memory no other thread shares (``SharedMemory.quiet``): it goes on,
    since a switch there is the same as a switch at its next step that can conflict."""

    def __init__(self, rng: random.Random, memory: SharedMemory | None = None) -> None:
        self.rng = rng
        self.memory = memory  # what earlier runs showed of memory; this run's trace is added at its end

    def pick_thread(self, decision):
        memory = self.memory
        if memory is not None and decision.current_enabled and memory.quiet(decision.view.running.access):
            return 0
        return self.rng.randrange(len(decision.enabled))

    def pick_value(self, n, label):
        return self.rng.randrange(n)

    def end(self, run_end):
        if self.memory is not None:
            self.memory.learn(run_end.trace, run_end.touched)


class RandomWalk(Strategy):
    """Uniform choice among enabled threads at every step that can conflict: a strong, cheap baseline (SCTBench)."""

    name = "random"

    def __init__(self, seed: int = 0) -> None:
        super().__init__(seed)
        self.memory = SharedMemory()  # which memory steps can conflict, learned from every run

    def new_execution(self, index, sampled=False):
        return RandomChooser(self.stream(f"random:{self.seed}:{index}"), self.memory)
