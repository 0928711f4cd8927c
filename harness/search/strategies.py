"""Exploration strategies: who runs next, and which value a choice takes.

Each strategy is a small object that hands out one *chooser* per execution. The run asks the chooser only where a
real decision exists (more than one option), and records the answer in the choice stream; a token is that stream.
Options are ordered so that 0 is the simplest answer: for threads, index 0 is "keep running the current thread"
when it can run (no preemption), then the others by logical id. Shrinking therefore means lowering choices.

Randomness comes from ``random.Random`` seeded with a string of (strategy, seed, schedule index): the same on every
machine and in every process (string seeds are hashed with SHA-512, not with the per-process hash seed).
"""

from __future__ import annotations

import random
from _random import Random as _CoreRandom
from hashlib import sha512 as _sha512

from racecheck.runtime.chooser import Chooser

__racecheck_engine__ = True


class Strategy:
    name = "base"

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed
        self.exhausted = False
        self._rng = random.Random()

    def _stream(self, text: str) -> random.Random:
        """The random stream of one execution, seeded by ``text`` (the same stream as ``random.Random(text)``).

        One generator re-seeded per execution rather than a new one: executions run one after another, and a new
        Mersenne Twister is 2.5 KB of fresh, cache-cold state per schedule (measured: most of a schedule's
        strategy cost on the micro workload). The previous execution's chooser is finished when this is called.

        ``Random.seed``'s own steps for a str, without its Python-level dispatch (the C seeding is the same call),
        so the stream is the one ``random.Random(text)`` gives: tests/engine/test_strategies_stream.py compares."""
        raw = text.encode()
        rng = self._rng
        _CoreRandom.seed(rng, int.from_bytes(raw + _sha512(raw).digest(), "big"))  # 3.10 has no default order
        rng.gauss_next = None
        return rng

    def new_execution(self, index: int) -> Chooser | None:
        """A chooser for schedule ``index``, or None when the strategy has nothing left to try."""
        raise NotImplementedError

    def end_execution(self, chooser: Chooser, steps: int) -> None:
        """Learn from a finished execution (its number of scheduling steps)."""


# --- random walk ------------------------------------------------------------------------------------------------


class _RandomChooser(Chooser):
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def pick_thread(self, enabled, current_enabled, yielding, current=None):
        return self.rng.randrange(len(enabled))

    def pick_value(self, n, label):
        return self.rng.randrange(n)


class RandomWalk(Strategy):
    """Uniform choice among enabled threads at every step: a strong, cheap baseline (SCTBench)."""

    name = "random"

    def new_execution(self, index):
        return _RandomChooser(self._stream(f"random:{self.seed}:{index}"))


# --- PCT --------------------------------------------------------------------------------------------------------


class _PCTChooser(Chooser):
    """One PCT execution: a random priority order, and d-1 change points among the decisions.

    Priorities are two lists, highest first: ``high`` holds every thread in a uniformly random order (a new thread
    is inserted at a random position when first seen, which keeps the whole order a uniform permutation), ``low``
    holds threads lowered at a change point (or because they yielded), later ones below earlier ones, all below
    every ``high`` thread: the paper's priorities d-1 > ... > 1 below the initial ones >= d.
    """

    def __init__(self, rng: random.Random, change_points: frozenset[int]) -> None:
        self.rng = rng
        self.change_points = change_points
        self.high: list[int] = []
        self.low: list[int] = []
        self.known: set[int] = set()  # every tid in high or low: one C-level check per decision for new threads
        self.decisions = 0  # decisions with a running thread: the k of the bound, and what change points count
        self.fired = 0

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

    def pick_thread(self, enabled, current_enabled, yielding, current=None):
        known = self.known
        if not known.issuperset(enabled):  # a thread seen for the first time (only in a run's first decisions)
            for tid in enabled:
                self._know(tid)
        if current is not None:
            # A decision taken while a thread is running (not while one exits): the thread at the scheduling point
            # is "the running thread" of the paper, and a change point here lowers it whether or not it can go on.
            if current not in known:
                self._know(current)
            self.decisions += 1
            if self.decisions in self.change_points:
                self.fired += 1
                self._lower(current)
            elif yielding:
                # A yielding thread waits for someone else: below everyone, so a polling loop cannot starve them.
                self._lower(current)
        for tid in self.high:  # the highest priority first; ``enabled`` holds a few distinct ids
            if tid in enabled:
                return enabled.index(tid)
        for tid in self.low:
            if tid in enabled:
                return enabled.index(tid)
        raise AssertionError("PCT: an enabled thread has no priority")  # unreachable: every enabled tid is known

    def pick_value(self, n, label):
        return self.rng.randrange(n)


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
        self.max_decisions = 0
        self.points_drawn = 0
        self.points_fired = 0

    def new_execution(self, index):
        rng = self._stream(f"pct:{self.seed}:{index}:{self.depth}")
        count = min(self.depth - 1, self.max_decisions)
        points = change_points(rng, self.max_decisions, count) if count else frozenset()
        return _PCTChooser(rng, points)

    def end_execution(self, chooser, steps):
        if isinstance(chooser, _PCTChooser):
            self.max_decisions = max(self.max_decisions, chooser.decisions)
            self.points_drawn += len(chooser.change_points)
            self.points_fired += chooser.fired


def change_points(rng: random.Random, decisions: int, count: int) -> frozenset[int]:
    """``count`` distinct decisions of ``1..decisions``: the set ``rng.sample(range(1, decisions + 1), count)``
    gives, from the same draws in the same order (so every seed keeps its schedules), without ``sample``'s
    generality (its argument checks and helper calls were a third of a PCT execution's setup, measured in place).
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


# --- bounded exhaustive search ---------------------------------------------------------------------------------


class _Frame:
    __slots__ = ("arity", "choice", "costly")

    def __init__(self, arity: int, choice: int, costly: bool) -> None:
        self.arity = arity
        self.choice = choice
        self.costly = costly  # True when every non-zero choice here is a preemption


class _DFSChooser(Chooser):
    def __init__(self, prefix: list[_Frame]) -> None:
        self.prefix = prefix
        self.frames: list[_Frame] = []

    def _next(self, arity: int, costly: bool) -> int:
        position = len(self.frames)
        if position < len(self.prefix):
            frame = self.prefix[position]
            if frame.arity != arity:
                from racecheck.errors import ReplayDivergence

                raise ReplayDivergence(
                    "exhaustive search diverged: the code under test made different decisions on a replayed prefix"
                )
            choice = frame.choice
        else:
            choice = 0
        self.frames.append(_Frame(arity, choice, costly))
        return choice

    def pick_thread(self, enabled, current_enabled, yielding, current=None):
        # Leaving a thread that could go on is a preemption, unless it yielded (CHESS's fairness: it waits anyway).
        return self._next(len(enabled), current_enabled and not yielding)

    def pick_value(self, n, label):
        return self._next(n, False)


class BoundedDFS(Strategy):
    """Exhaustive depth-first search over the choice tree with a preemption bound (CHESS, Musuvathi & Qadeer 2007).

    Switching away from a thread that could continue costs one preemption; switching when it blocks, ends or
    yields is free. Fairness toward yielding threads (a spin loop is left until someone else has run) lives in the
    scheduler, so a correct polling loop is a finite tree here, not a livelock.
    Every schedule with at most ``preemption_bound`` preemptions is run exactly once; ``exhausted`` becomes True
    when the tree is done, which is the proof that no schedule within the bound fails.
    """

    name = "dfs"

    def __init__(self, seed: int = 0, preemption_bound: int | None = 2) -> None:
        super().__init__(seed)
        self.bound = preemption_bound
        self.next_prefix: list[_Frame] | None = []

    def new_execution(self, index):
        if self.next_prefix is None:
            self.exhausted = True
            return None
        return _DFSChooser(self.next_prefix)

    def end_execution(self, chooser, steps):
        frames = chooser.frames
        used = [0] * (len(frames) + 1)
        for i, frame in enumerate(frames):
            used[i + 1] = used[i] + (1 if frame.costly and frame.choice else 0)
        for i in range(len(frames) - 1, -1, -1):
            frame = frames[i]
            if frame.choice + 1 >= frame.arity:
                continue
            cost = used[i] + (1 if frame.costly else 0)
            if self.bound is not None and cost > self.bound:
                continue
            self.next_prefix = frames[:i] + [_Frame(frame.arity, frame.choice + 1, frame.costly)]
            return
        self.next_prefix = None
        self.exhausted = True  # known as soon as the last branch is run, not only when asked for another


def make_strategy(name: str, seed: int, depth: int, preemption_bound: int | None) -> Strategy:
    """The strategy ``name`` as the registry builds it (kept for callers that pass Config's options by position)."""
    from racecheck.search import registry

    return registry.build(name, seed, depth=depth, preemption_bound=preemption_bound)


