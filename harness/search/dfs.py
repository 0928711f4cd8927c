"""Bounded exhaustive search (``strategy="dfs"``): every schedule within a preemption bound, each run once."""

from __future__ import annotations

from racecheck.errors import ReplayDivergence
from racecheck.runtime.chooser import Chooser
from racecheck.search.busy_wait import SpinWatch
from racecheck.search.strategy import Strategy

__racecheck_engine__ = True


class _Frame:
    """One decision of a dfs execution: how many options it had, which one was taken, whether leaving is costly."""

    __slots__ = ("arity", "choice", "costly")

    def __init__(self, arity: int, choice: int, costly: bool) -> None:
        self.arity = arity
        self.choice = choice
        self.costly = costly  # True when every non-zero choice here is a preemption


class DFSChooser(Chooser):
    """One dfs execution: replays ``prefix`` (the path to the next unexplored branch), then takes option 0 at every
    later decision; ``frames`` records every decision it made, for ``BoundedDFS.end_execution``."""

    def __init__(self, prefix: list[_Frame], spins: bool = False) -> None:
        self.prefix = prefix
        self.frames: list[_Frame] = []
        self.spins = spins  # past the prefix, hand over from a busy-waiting thread (``BoundedDFS.hand_over_spins``)
        self.watch = SpinWatch()  # past the prefix: how long the current thread has been kept at one step

    def _next(self, arity: int, costly: bool) -> int:
        position = len(self.frames)
        if position < len(self.prefix):
            frame = self.prefix[position]
            if frame.arity != arity:
                raise ReplayDivergence(
                    "exhaustive search diverged: the code under test made different decisions on a replayed prefix"
                )
            choice = frame.choice
        else:
            choice = 0
        self.frames.append(_Frame(arity, choice, costly))
        return choice

    def fresh(self) -> DFSChooser:
        """The same prefix again (its frames are never changed: the next prefix is made of new ones)."""
        return DFSChooser(self.prefix, self.spins)

    def pick_thread(self, decision):
        # Leaving a thread that could go on is a preemption, unless it yielded (CHESS's fairness: it waits anyway).
        if self.spins and len(self.frames) >= len(self.prefix) and self.watch.spins(decision):
            # a busy-wait (``racecheck.search.busy_wait``): the next thread, as after a yield; this branch, like a
            # yield's, costs no preemption of the bound, and its "keep spinning" sibling is never run
            self.frames.append(_Frame(len(decision.enabled), 1, False))
            return 1
        return self._next(len(decision.enabled), decision.current_enabled and not decision.yielding)

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

    def __init__(self, seed: int = 0, preemption_bound: int | None = 2, hand_over_spins: bool = False) -> None:
        super().__init__(seed)
        self.bound = preemption_bound
        self.next_prefix: list[_Frame] | None = []
        # The shrinker's pass (``shrink.fewest_preemptions``), which looks for a smaller failing schedule and proves
        # nothing: past a prefix a busy-waiting thread hands over (``busy_wait``) instead of spinning each run to its
        # step cap. Never for ``strategy="dfs"``: pruning "spin on" would prune a loop that reads one value again and
        # again while it makes progress of its own, and its "exhausted" is a proof.
        self.hand_over_spins = hand_over_spins

    def new_execution(self, index, sampled=False):
        if self.next_prefix is None:
            self.exhausted = True
            return None
        return DFSChooser(self.next_prefix, self.hand_over_spins)

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
