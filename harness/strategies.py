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
from collections.abc import Sequence

__racecheck_engine__ = True


class Chooser:
    """One execution's source of decisions."""

    def pick_thread(self, enabled: Sequence[int], current_enabled: bool, yielding: bool) -> int:
        """Index into ``enabled`` (logical thread ids; ``enabled[0]`` is the current thread if current_enabled)."""
        raise NotImplementedError

    def pick_value(self, n: int, label: str) -> int:
        raise NotImplementedError


class Strategy:
    name = "base"

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed
        self.exhausted = False

    def new_execution(self, index: int) -> Chooser | None:
        """A chooser for schedule ``index``, or None when the strategy has nothing left to try."""
        raise NotImplementedError

    def end_execution(self, chooser: Chooser, steps: int) -> None:
        """Learn from a finished execution (its number of scheduling steps)."""


# --- random walk ------------------------------------------------------------------------------------------------


class _RandomChooser(Chooser):
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def pick_thread(self, enabled, current_enabled, yielding):
        return self.rng.randrange(len(enabled))

    def pick_value(self, n, label):
        return self.rng.randrange(n)


class RandomWalk(Strategy):
    """Uniform choice among enabled threads at every step: a strong, cheap baseline (SCTBench)."""

    name = "random"

    def new_execution(self, index):
        return _RandomChooser(random.Random(f"random:{self.seed}:{index}"))


# --- PCT --------------------------------------------------------------------------------------------------------


class _PCTChooser(Chooser):
    def __init__(self, rng: random.Random, depth: int, estimated_steps: int) -> None:
        self.rng = rng
        self.priority: dict[int, float] = {}
        self.depth = depth
        # d-1 priority change points, uniformly among the steps we expect this execution to take.
        points = sorted(rng.sample(range(1, max(estimated_steps, depth) + 1), k=max(depth - 1, 0)))
        self.change_at = {step: depth - 1 - i for i, step in enumerate(points)}  # later points -> lower priority
        self.step = 0
        self.last: int | None = None

    def _priority(self, tid: int) -> float:
        if tid not in self.priority:
            self.priority[tid] = self.depth + self.rng.random()  # above every change-point priority
        return self.priority[tid]

    def pick_thread(self, enabled, current_enabled, yielding):
        self.step += 1
        if current_enabled and yielding:
            # A thread that yields (sleep, timed-out wait) drops below the others so polling loops cannot starve them.
            floor = min((self._priority(t) for t in enabled), default=0.0)
            self.priority[enabled[0]] = floor - 1.0
        if self.step in self.change_at and self.last is not None and self.last in self.priority:
            self.priority[self.last] = float(self.change_at[self.step]) - 1.0 - self.rng.random() * 0.5
        best = max(range(len(enabled)), key=lambda i: (self._priority(enabled[i]), -i))
        self.last = enabled[best]
        return best

    def pick_value(self, n, label):
        return self.rng.randrange(n)


class PCT(Strategy):
    """Probabilistic Concurrency Testing (Burckhardt et al., ASPLOS 2010).

    Random distinct priorities per thread, the highest-priority enabled thread runs, and at d-1 random steps the
    running thread drops below all others. A bug of depth d is found with probability >= 1/(n*k^(d-1)) per run.
    The step estimate k is the largest execution seen so far, so change points spread over the real length.
    """

    name = "pct"

    def __init__(self, seed: int = 0, depth: int = 3) -> None:
        super().__init__(seed)
        if depth < 1:
            raise ValueError("pct depth must be >= 1")
        self.depth = depth
        self.estimated_steps = 50

    def new_execution(self, index):
        return _PCTChooser(random.Random(f"pct:{self.seed}:{index}:{self.depth}"), self.depth, self.estimated_steps)

    def end_execution(self, chooser, steps):
        self.estimated_steps = max(self.estimated_steps, steps)


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

    def pick_thread(self, enabled, current_enabled, yielding):
        return self._next(len(enabled), current_enabled)

    def pick_value(self, n, label):
        return self._next(n, False)


class BoundedDFS(Strategy):
    """Exhaustive depth-first search over the choice tree with a preemption bound (CHESS, Musuvathi & Qadeer 2007).

    Switching away from a thread that could continue costs one preemption; switching when it blocks or ends is free.
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


# --- replay -------------------------------------------------------------------------------------------------------


class ReplayChooser(Chooser):
    """Feeds recorded choices back; past their end every choice is 0 (keep the current thread, no fault)."""

    def __init__(self, choices: Sequence[int]) -> None:
        self.choices = list(choices)
        self.position = 0
        self.diverged: str | None = None

    def _next(self, n: int, what: str) -> int:
        if self.position < len(self.choices):
            value = self.choices[self.position]
            self.position += 1
            if value >= n:
                if self.diverged is None:
                    self.diverged = f"recorded choice {value} at decision {self.position} but only {n} {what} existed"
                return 0
            return value
        self.position += 1
        return 0

    def pick_thread(self, enabled, current_enabled, yielding):
        return self._next(len(enabled), "runnable threads")

    def pick_value(self, n, label):
        return self._next(n, f"values for {label}")


def make_strategy(name: str, seed: int, depth: int, preemption_bound: int | None) -> Strategy:
    if name == "random":
        return RandomWalk(seed)
    if name == "pct":
        return PCT(seed, depth=depth)
    if name == "dfs":
        return BoundedDFS(seed, preemption_bound=preemption_bound)
    raise ValueError(f"unknown strategy {name!r} (choose random, pct or dfs)")


STRATEGIES = ("random", "pct", "dfs")
