"""Partial Order Sampling (Yuan, Yang and Gu, CAV 2018): ``strategy="pos"``.

Random walk samples schedules very unevenly: an ordering that needs one thread to run many steps in a row is rare.
PCT fixes that for a bug depth chosen in advance. POS needs no depth: every pending operation (the next step of a
thread) carries a random priority, the highest-priority enabled one runs, and after an operation runs the
operations that *race* with it (another thread's pending step on the same resource, not both reads) draw new
priorities. Operations on unrelated resources keep theirs, so independent work does not dilute the choices that
matter, and every partial order of racing operations gets a fair share of samples. With memory watched, an
operation that touches only memory no other thread shares (``racecheck.search.shared_memory``) keeps the priority of
its thread's last one: it is part of the thread's next racing operation, not one of its own.

What races is read from the accesses every step records and every waiting thread's pending operation names
(``racecheck.search.dependency``): a step that ran (with its notes: a release, a notify) re-draws the priority of
every other thread's pending operation it conflicts with. The chooser reads the trace and the pending operations
from the decision it is handed (``Decision.view``); it decides only where the scheduler asks (more than one thread
can run), and applies the priority updates for every step that ran since, asked or not.
"""

from __future__ import annotations

import random

from racecheck.runtime.chooser import Chooser, Decision, RunView
from racecheck.search.dependency import dependent
from racecheck.search.shared_memory import SharedMemory
from racecheck.search.strategy import Strategy

__racecheck_engine__ = True


class POSChooser(Chooser):
    """One POS execution: a random priority per pending operation (a thread's next step), re-drawn for the
    operations that race with each step that ran; the highest-priority enabled thread runs."""

    def __init__(self, rng: random.Random, memory: SharedMemory | None = None) -> None:
        self.rng = rng
        self.priority: dict[tuple[int, int], float] = {}  # (thread, its step number) of a pending operation
        self.done: dict[int, int] = {}  # steps each thread has run
        self.seen = 0  # trace events already accounted for
        # what earlier runs showed of memory (``racecheck.search.shared_memory``); this run's trace is added at its
        # end. The running thread's next step, when quiet, keeps the priority its last step ran with (``last``):
        # it commutes with every other thread's step, so it is one operation with its thread's next one that can
        # race, and drawing again for it would give a thread that touches much private memory between two racing
        # steps many draws where one belongs.
        self.memory = memory
        self.last: dict[int, float] = {}

    def _catch_up(self, view: RunView) -> None:
        """Account for the steps that ran since the last decision: each one re-draws its racing operations."""
        trace = view.trace
        pending: list | None = None
        while self.seen < len(trace):
            event = trace[self.seen]
            self.seen += 1
            if event.switch != "info":  # a note belongs to the step before it: it only adds what that step touched
                self.done[event.tid] = self.done.get(event.tid, 0) + 1
                ran = self.priority.pop((event.tid, self.done[event.tid] - 1), None)
                if ran is not None:
                    self.last[event.tid] = ran
            ran = event.access
            if not ran:
                continue
            if pending is None:
                pending = [p for p in view.pending() if p.state == "running"]
            for other in pending:
                if other.tid == event.tid:
                    continue
                key = (other.tid, self.done.get(other.tid, 0))
                if key in self.priority and dependent(ran, other.access):
                    self.priority[key] = self.rng.random()

    def pick_thread(self, decision: Decision):
        self._catch_up(decision.view)
        best, best_priority = 0, -1.0
        for index, tid in enumerate(decision.enabled):
            key = (tid, self.done.get(tid, 0))
            value = self.priority.get(key)
            if value is None:
                value = self.priority[key] = self._fresh(tid, decision)
            if value > best_priority:
                best, best_priority = index, value
        return best

    def _fresh(self, tid: int, decision: Decision) -> float:
        """The priority of thread ``tid``'s pending operation, seen for the first time."""
        memory = self.memory
        if memory is not None and tid == decision.current and tid in self.last:
            if memory.quiet(decision.view.running.access):
                return self.last[tid]
        return self.rng.random()

    def pick_value(self, n, label):
        return self.rng.randrange(n)

    def end(self, run_end):
        if self.memory is not None:
            self.memory.learn(run_end.trace, run_end.touched)


class POS(Strategy):
    """Partial order sampling: random priorities per pending operation, re-drawn for the racing ones."""

    name = "pos"

    def __init__(self, seed: int = 0) -> None:
        super().__init__(seed)
        self.memory = SharedMemory()  # which memory steps can conflict, learned from every run

    def new_execution(self, index, sampled=False):
        return POSChooser(self.stream(f"pos:{self.seed}:{index}"), self.memory)
