"""Minimise a failing schedule toward the fewest preemptions, then the fewest steps.

Pure logic over a ``probe(choices)`` callback that replays a candidate choice sequence and says whether it still
fails the same way (and with which cost). Because choice 0 always means "no preemption / no fault", lowering and
deleting choices is all it takes; the shrinker never needs to know what a choice meant (Hypothesis' idea).
Candidates are tried in a fixed order and the budget counts probes, so shrinking is deterministic.
``fewest_preemptions`` is the exhaustive second pass that turns the greedy local minimum into the global one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from racecheck.runtime.chooser import Chooser
from racecheck.search.dfs import BoundedDFS

__racecheck_engine__ = True


@dataclass
class Probe:
    choices: list[int]  # what the replay actually consumed, trailing zeros removed
    key: tuple  # (preemptions, steps, ...) - smaller is simpler
    payload: Any = None  # whatever the caller wants back for the winner (the run)


def normalize(choices: list[int]) -> list[int]:
    out = list(choices)
    while out and out[-1] == 0:
        out.pop()
    return out


def _candidates(choices: list[int]) -> Iterator[list[int]]:
    n = len(choices)
    # 1. zero out whole blocks, halving their size (drops many incidental switches at once), starting with all of
    #    them: the schedule without any preemption is the simplest there is
    size = n
    while size >= 1:
        for start in range(0, n - size + 1, size):
            yield choices[:start] + [0] * size + choices[start + size :]
        size //= 2
    # 2. zero out single choices, latest first (late preemptions are most often incidental)
    for i in range(n - 1, -1, -1):
        if choices[i]:
            yield choices[:i] + [0] + choices[i + 1 :]
    # 3. delete single choices (moves a preemption earlier or merges two)
    for i in range(n - 1, -1, -1):
        yield choices[:i] + choices[i + 1 :]
    # 4. lower single choices
    for i in range(n):
        for lower in range(1, choices[i]):
            yield choices[:i] + [lower] + choices[i + 1 :]


def simpler(a: Probe, b: Probe) -> bool:
    """Whether ``a`` is simpler than ``b``: a smaller key, or the same key and fewer choices, or as many and the
    first that differs lower (shortlex). The tie-break is what saves probes: a choice that is no preemption (which
    thread goes on after one blocks or ends) changes no key when zeroed, and without it every later pass over the
    candidates would try zeroing it again, a whole run each time (TinyDB's lost insert: one probe in three)."""
    return (a.key, len(a.choices), a.choices) < (b.key, len(b.choices), b.choices)


def shrink(start: Probe, probe: Callable[[list[int]], Probe | None], budget: int = 300,
           more: Callable[[], bool] | None = None, seen: set[tuple[int, ...]] | None = None) -> tuple[Probe, int]:
    """Greedy descent to a local minimum; returns the best probe and the number of probes spent. ``more()``: whether
    the work budget (``post_budget``) allows another probe; ``seen``: choice sequences (normalized) never to probe,
    known not to fail the same way more simply than ``start``; the descent adds what it probes."""
    best = start
    spent = 0
    seen = set() if seen is None else seen
    seen.add(tuple(best.choices))
    improved = True
    while improved and spent < budget:
        improved = False
        for candidate in _candidates(best.choices):
            candidate = normalize(candidate)
            key = tuple(candidate)
            if key in seen:
                continue
            seen.add(key)
            if spent >= budget or more is not None and not more():
                improved = False
                break
            spent += 1
            result = probe(candidate)
            if result is not None and simpler(result, best):
                best = result
                seen.add(tuple(result.choices))
                improved = True
                break
    return best, spent


class Exhaustive:
    """The bounded exhaustive search of ``fewest_preemptions``, bound after bound, remembering the decisions of
    every schedule it ran that did not fail the same way. A run is a function of its decisions, so a schedule met
    again at a higher bound (the dfs of bound b holds every schedule of the bounds below it) is not run again: its
    recorded decisions stand in for the run, and the search goes on as if it had been made. ``ran`` also names
    those schedules for the greedy descent (``shrink``'s ``seen``): a dfs schedule is a choice sequence a replay
    would follow the same way (past its prefix both keep the current thread and hand over from a spinner)."""

    def __init__(self, execute: Callable[[Chooser], Probe | None]) -> None:
        self.execute = execute
        self.ran: dict[tuple[int, ...], list] = {}  # a schedule's prefix -> the decisions its run made

    def search(self, bounds: Iterable[int], budget: int, more: Callable[[], bool] | None = None
               ) -> tuple[Probe | None, int]:
        """The first schedule that fails the same way at the lowest of ``bounds`` that has one, within ``budget``
        runs (and ``more()``); (the failure or None, runs spent)."""
        spent = 0
        for bound in bounds:
            dfs = BoundedDFS(0, preemption_bound=bound, hand_over_spins=True)
            while spent < budget and (more is None or more()):
                chooser = dfs.new_execution(spent)
                if chooser is None:
                    break
                prefix = tuple(frame.choice for frame in chooser.prefix)
                if prefix in self.ran:  # run at a lower bound, and it did not fail: the same run again
                    chooser.frames = self.ran[prefix]
                    dfs.end_execution(chooser, 0)
                    continue
                spent += 1
                failure = self.execute(chooser)
                dfs.end_execution(chooser, 0)
                if failure is not None:
                    return failure, spent
                self.ran[prefix] = chooser.frames
            if spent >= budget or more is not None and not more():
                break
        return None, spent


def fewest_preemptions(
    execute: Callable[[Chooser], Probe | None], found: int, budget: int = 300, more: Callable[[], bool] | None = None
) -> tuple[Probe | None, int]:
    """Bounded exhaustive search at bounds 0, 1, ..., found-1: the first schedule that fails the same way.

    Greedy shrinking finds a local minimum: choices change meaning when an earlier one changes, so lowering them one
    at a time can get stuck above the true minimum. Exhaustive search with an increasing preemption bound cannot:
    the first same-kind failure it meets has the fewest preemptions possible (within ``budget`` executions).
    ``execute(chooser)`` runs one schedule driven by ``chooser`` and returns a Probe when it fails the same way.
    Returns (the failure or None, executions spent).
    """
    return Exhaustive(execute).search(range(found), budget, more)


def minimal(start: Probe, probe: Callable[[list[int]], Probe | None], execute: Callable[[Chooser], Probe | None],
            budget: int = 300, more: Callable[[], bool] | None = None) -> tuple[Probe, int]:
    """The simplest schedule that fails as ``start`` does: fewest preemptions (proved by ``fewest_preemptions``
    within the budgets), then fewest steps; (it, probes and runs spent). ``probe`` replays a choice sequence,
    ``execute`` runs a dfs chooser; ``budget`` caps each of the passes, ``more()`` all of them together.

    Bound 0 comes first: its schedules are few (only the free choices after a thread blocks or ends), its first is
    the greedy descent's first candidate (no preemption at all), and the greedy descent never runs one of them
    again; when the descent ends above one preemption, the bounds between run, each skipping what a lower bound
    ran. The same probes as greedy-then-exhaustive, less the runs made twice: TinyDB's lost insert, whose greedy
    descent ends at one preemption, shrinks in 8 runs instead of 15."""
    exhaustive = Exhaustive(execute)
    best, spent = start, 0
    if start.key[0] > 0:
        zero, spent = exhaustive.search(range(1), budget, more)
        best = zero if zero is not None and simpler(zero, start) else start
    seen = set(exhaustive.ran)  # all of it fails no more simply than anything found later: never probed again
    best, probes = shrink(best, probe, budget, more, seen)
    spent += probes
    if best.key[0] > 1 and (more is None or more()):
        fewer, runs = exhaustive.search(range(1, best.key[0]), budget, more)
        spent += runs
        if fewer is not None and simpler(fewer, best):
            seen.update(exhaustive.ran)
            best, probes = shrink(fewer, probe, budget, more, seen)
            spent += probes
    return best, spent
