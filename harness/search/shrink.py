"""Minimise a failing schedule toward the fewest preemptions, then the fewest steps.

Pure logic over a ``probe(choices)`` callback that replays a candidate choice sequence and says whether it still
fails the same way (and with which cost). Because choice 0 always means "no preemption / no fault", lowering and
deleting choices is all it takes; the shrinker never needs to know what a choice meant (Hypothesis' idea).
Candidates are tried in a fixed order and the budget counts probes, so shrinking is deterministic.
``fewest_preemptions`` is the exhaustive second pass that turns the greedy local minimum into the global one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
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


def shrink(start: Probe, probe: Callable[[list[int]], Probe | None], budget: int = 300,
           more: Callable[[], bool] | None = None) -> tuple[Probe, int]:
    """Greedy descent to a local minimum; returns the best probe and the number of probes spent. ``more()``: whether
    the work budget (``post_budget``) allows another probe."""
    best = start
    spent = 0
    seen: set[tuple[int, ...]] = {tuple(best.choices)}
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
            if result is not None and result.key < best.key:
                best = result
                seen.add(tuple(result.choices))
                improved = True
                break
    return best, spent


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
    spent = 0
    for bound in range(found):
        search = BoundedDFS(0, preemption_bound=bound, hand_over_spins=True)
        while spent < budget and (more is None or more()):
            chooser = search.new_execution(spent)
            if chooser is None:
                break
            spent += 1
            failure = execute(chooser)
            search.end_execution(chooser, 0)
            if failure is not None:
                return failure, spent
        if spent >= budget or more is not None and not more():
            break
    return None, spent
