"""Probabilistic Concurrency Testing (``strategy="pct"``): random thread priorities and depth-1 change points."""

from __future__ import annotations

import random

from racecheck.runtime.chooser import Chooser
from racecheck.search.busy_wait import SPIN, SPIN_ACROSS_UNWATCHED, spinning
from racecheck.search.shared_memory import SharedMemory
from racecheck.search.strategy import Strategy

__racecheck_engine__ = True

class PCTChooser(Chooser):
    """One PCT execution: a random priority order, and d-1 change points among the decisions.

    Priorities are two lists, highest first: ``high`` holds every thread in a uniformly random order (a new thread
    is inserted at a random position when first seen, which keeps the whole order a uniform permutation), ``low``
    holds threads lowered at a change point (or because they yielded), later ones below earlier ones, all below
    every ``high`` thread: the paper's priorities d-1 > ... > 1 below the initial ones >= d.
    """

    def __init__(self, rng: random.Random, change_points: frozenset[int], memory: SharedMemory | None = None,
                 sampled: bool = False) -> None:
        self.rng = rng
        self.change_points = change_points
        # what earlier runs showed of memory (None: count every decision); this run's trace is added at its end
        self.memory = memory
        self.asked: list = []  # the running thread's next step at each decision, for ``counted``
        self.high: list[int] = []
        self.low: list[int] = []
        self.known: set[int] = set()  # every tid in high or low: one C-level check per decision for new threads
        self.decisions = 0  # decisions with a running thread: the k of the bound, and what change points count
        self.fired = 0
        self.sampled = sampled  # made for a sampled execution (``Strategy.new_execution``)
        self.spinner = -1  # the running thread at the last decision (-1: none was running) ...
        self.again: tuple = ()  # ... its next step then ...
        self.repeats = 0  # ... and at how many decisions in a row it was that thread and that step

    def _know(self, tid: int) -> None:
        if tid not in self.known:
            self.known.add(tid)
            self.high.insert(self.rng.randrange(len(self.high) + 1), tid)

    def _lower(self, tid: int) -> None:
        if tid in self.high:
            self.high.remove(tid)
        elif tid in self.low:
            self.low.remove(tid)
        self.low.append(tid)

    def pick_thread(self, decision):
        enabled, current = decision.enabled, decision.current
        known = self.known
        if not known.issuperset(enabled):  # a thread seen for the first time (only in a run's first decisions)
            for tid in enabled:
                self._know(tid)
        if current is not None:
            # A decision taken while a thread is running (not while one exits): the thread at the scheduling point
            # is "the running thread" of the paper, and a change point here lowers it whether or not it can go on.
            if current not in known:
                self._know(current)
            memory = self.memory
            counts = True
            if memory is not None:
                access = decision.view.running.access
                self.asked.append(access)
                # Nothing it is about to touch can conflict with another thread's step: lowering it here would be
                # lowering it at its next step that can, so this is not a decision PCT counts.
                counts = not memory.quiet(access)
                if current == self.spinner and access == self.again:
                    self.repeats += 1  # the same thread at the same step: nobody else ran since (a switch decides)
                else:
                    self.spinner, self.again, self.repeats = current, access, 1
            if counts:
                self.decisions += 1
            if counts and self.decisions in self.change_points:
                self.fired += 1
                self._lower(current)
            elif decision.yielding:
                # A yielding thread waits for someone else: below everyone, so a polling loop cannot starve them.
                self._lower(current)
            elif self.repeats >= SPIN and spinning(self.again) and self._spins(decision):
                # A busy-wait (``racecheck.search.busy_wait``): it waits for someone else as a yielding thread does.
                # Left on top, a spinner whose lock holder a change point lowered spun to the step limit.
                self.repeats = 0
                self._lower(current)
        else:
            self.spinner = -1  # a thread exited: whoever runs next, someone else ran between
        for tid in self.high:  # the highest priority first; ``enabled`` holds a few distinct ids
            if tid in enabled:
                return enabled.index(tid)
        for tid in self.low:
            if tid in enabled:
                return enabled.index(tid)
        raise AssertionError("PCT: an enabled thread has no priority")  # unreachable: every enabled tid is known

    def _spins(self, decision) -> bool:
        """At ``SPIN`` repeats of one read: a busy-wait, unless the run is sampled and its learning runs saw the
        read made again after unwatched code (then only at ``SPIN_ACROSS_UNWATCHED``)."""
        if not self.sampled or self.repeats >= SPIN_ACROSS_UNWATCHED:
            return True
        return self.again not in decision.view.recurring

    def pick_value(self, n, label):
        return self.rng.randrange(n)

    def end(self, run_end):
        if self.memory is not None:
            self.memory.learn(run_end.trace, run_end.touched)

    def counted(self) -> int:
        """The decisions of this run that PCT counts, as the runs so far (this one included) show memory: the k
        this run measured once it ended (memory first seen in it is counted while it runs)."""
        if self.memory is None:
            return self.decisions
        quiet = self.memory.quiet
        return sum(1 for access in self.asked if not quiet(access))


class PCT(Strategy):
    """Probabilistic Concurrency Testing (Burckhardt et al., ASPLOS 2010), counting decisions as Shuttle does.

    Random distinct priorities per thread; the highest-priority enabled thread runs; at d-1 change points the
    running thread drops below all others (a later change point lower still). A bug of depth d among n threads
    and k decisions is found with probability >= 1/(n*k^(d-1)) per execution.

    k counts *decisions* only (points where more than one thread could run): steps without a choice cannot
    preempt anyone, so a change point there would be thrown away. The change points of an execution are drawn
    uniformly, without repetition, from 1..k where k is the largest decision count seen in earlier executions
    (the first execution has none and measures k), so each drawn point falls on a decision that exists in an
    execution as long as the longest one seen. ``points_drawn``/``points_fired`` count them for the record.
    """

    name = "pct"

    def __init__(self, seed: int = 0, depth: int = 3) -> None:
        super().__init__(seed)
        if depth < 1:
            raise ValueError("pct depth must be >= 1")
        self.depth = depth
        self.memory = SharedMemory()  # which memory steps can conflict, learned from every run
        self.max_decisions = 0
        self.max_sampled_decisions = 0  # the same, of the sampled executions (``new_execution``'s ``sampled``)
        self.points_drawn = 0
        self.points_fired = 0

    def new_execution(self, index, sampled=False):
        rng = self.stream(f"pct:{self.seed}:{index}:{self.depth}")
        decisions = self.max_sampled_decisions if sampled else self.max_decisions
        count = min(self.depth - 1, decisions)
        points = change_points(rng, decisions, count) if count else frozenset()
        return PCTChooser(rng, points, self.memory, sampled)

    def end_execution(self, chooser, steps):
        if isinstance(chooser, PCTChooser):
            counted = chooser.counted()
            if chooser.sampled:
                self.max_sampled_decisions = max(self.max_sampled_decisions, counted)
            else:
                self.max_decisions = max(self.max_decisions, counted)
            self.points_drawn += len(chooser.change_points)
            self.points_fired += chooser.fired


def change_points(rng: random.Random, decisions: int, count: int) -> frozenset[int]:
    """``count`` distinct decisions of ``1..decisions``: the set ``rng.sample(range(1, decisions + 1), count)``
    gives, from the same draws in the same order (so every seed keeps its schedules), without ``sample``'s
    generality (its argument checks and helper calls were a large share of a PCT execution's setup).
    Up to five points (depth 6), which is where ``sample`` keeps using the same two algorithms; beyond, it is asked.
    """
    if count > 5:
        return frozenset(rng.sample(range(1, decisions + 1), k=count))
    getrandbits = rng.getrandbits
    if decisions <= 21:  # sample's pool algorithm: a drawn slot is refilled from the end
        pool = list(range(1, decisions + 1))
        points = []
        for i in range(count):
            left = decisions - i
            bits = left.bit_length()
            j = getrandbits(bits)
            while j >= left:
                j = getrandbits(bits)
            points.append(pool[j])
            pool[j] = pool[left - 1]
        return frozenset(points)
    bits = decisions.bit_length()  # sample's set algorithm: draw again on a repeat
    chosen: set[int] = set()
    for _ in range(count):
        j = getrandbits(bits)
        while j >= decisions:
            j = getrandbits(bits)
        while j in chosen:
            j = getrandbits(bits)
            while j >= decisions:
                j = getrandbits(bits)
        chosen.add(j)
    return frozenset(j + 1 for j in chosen)
