"""Name the racing pair: the two conflicting operations whose order decides a failure.

A shrunk schedule still shows every step; a person wants the one ordering that matters. After shrinking, every
pair of *conflicting* steps (two threads, one object, kinds that do not commute: ``racecheck.search.dependency``,
read from the accesses each step recorded) that are neighbours in that object's history is a candidate. Each
candidate is tested by running the same schedule with the pair swapped (the later operation is made to happen
first, everything else kept in the shrunk order as far as the program allows) and checking that the failure goes
away. The first candidate, latest in the trace first, whose swap is realised and removes the failure is the race.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from racecheck import runtime
from racecheck.runtime.chooser import Chooser
from racecheck.runtime.trace import TraceEvent, normalize_addresses
from racecheck.search.dependency import conflicts, most_specific, shown, steps

__racecheck_engine__ = True


def conflicting(a: TraceEvent, b: TraceEvent) -> frozenset[str]:
    """The objects two events of different threads conflict on (empty: they commute)."""
    if a.tid == b.tid:
        return frozenset()
    return conflicts(a.access, b.access)


@dataclass(frozen=True)
class RaceEvent:
    """One side of a race: the thread, its operation and where the code under test asked for it."""

    tid: int
    op: str
    loc: str
    step: int
    nth: int  # this is the thread's nth step (0-based): its identity across replays
    waiting: bool = False  # the operation a thread was blocked in when the run ended (a deadlock's other side)

    def __str__(self) -> str:
        where = f" @{self.loc}" if self.loc else ""
        state = " (waiting)" if self.waiting else ""
        return normalize_addresses(f"T{self.tid} {self.op}{state}{where}")


@dataclass(frozen=True)
class Race:
    """``first`` happened before ``second`` and the failure needs that order: swapped, the run does not fail so."""

    first: RaceEvent
    second: RaceEvent
    resource: str
    swapped_outcome: str  # what the swapped run did instead ("passes", or the other failure)
    swapped_token: str = ""  # replays the swapped schedule: see for yourself that the order decides

    def __str__(self) -> str:
        return f"racing pair on {self.resource}: {self.first} raced with {self.second}"

    def key(self) -> tuple:
        """Comparable across runs and schedules: the two operations and places, not steps or thread numbers."""
        return ((self.first.op, self.first.loc), (self.second.op, self.second.loc))


WAITING = "waiting"  # the switch mark of a pseudo-event: an operation a thread was blocked in at the end


def steps_of(events: Sequence[TraceEvent]) -> list[tuple[TraceEvent, int]]:
    """The scheduling steps of a trace (no notes), each with its per-thread ordinal."""
    return [(event, nth) for event, nth, _touched in steps(events)]


def candidates(events: Sequence[TraceEvent]) -> list[tuple[int, int, str]]:
    """Pairs (i, j, resource) of positions in ``steps_of(events)``: for every step j, the latest earlier step of
    another thread that conflicts with it (its own accesses and its notes'), and the object they conflict on as a
    report names it; latest j first."""
    found = steps(events)
    pairs: list[tuple[int, int, str]] = []
    for j in range(len(found) - 1, 0, -1):
        later, _, touched = found[j]
        for i in range(j - 1, -1, -1):
            earlier, _, before = found[i]
            if earlier.tid == later.tid:
                continue
            shared = conflicts(before, touched)
            if shared:
                pairs.append((i, j, shown(most_specific(shared))))
                break
    return pairs


class SwapChooser(Chooser):
    """Follows an order of (thread, nth step) as closely as the program allows: at each decision, the first entry
    of ``order`` whose thread is at exactly that step and can run; past the order, the current thread goes on.
    Values (fault and data choices) replay the original ones in sequence."""

    def __init__(self, order: Sequence[tuple[int, int]], values: Sequence[int]) -> None:
        self.order = list(order)
        self.values = list(values)
        self.value_position = 0

    def pick_thread(self, enabled, current_enabled, yielding, current=None):
        run = runtime.current_run()
        done: dict[int, int] = {}
        for event in run.trace if run is not None else ():
            if event.switch != "info":
                done[event.tid] = done.get(event.tid, 0) + 1
        positions = {tid: index for index, tid in enumerate(enabled)}
        for tid, nth in self.order:
            if tid in positions and done.get(tid, 0) == nth:
                return positions[tid]
        return 0

    def pick_value(self, n, label):
        value = self.values[self.value_position] if self.value_position < len(self.values) else 0
        self.value_position += 1
        return value if value < n else 0


def swapped_order(steps: list[tuple[TraceEvent, int]], i: int, j: int) -> list[tuple[int, int]]:
    """The shrunk order with step i (and the same thread's steps up to j, which must follow it) moved after j."""
    first_tid = steps[i][0].tid
    moved = [(e.tid, n) for e, n in steps[i : j + 1] if e.tid == first_tid]
    kept = [(e.tid, n) for e, n in steps[i + 1 : j + 1] if e.tid != first_tid]
    return [(e.tid, n) for e, n in steps[:i]] + kept + moved + [(e.tid, n) for e, n in steps[j + 1 :]]


def _position(events: Sequence[TraceEvent], tid: int, nth: int) -> int | None:
    for index, (event, n) in enumerate(steps_of(events)):
        if event.tid == tid and n == nth:
            return index
    return None


def find_race(
    events: Sequence[TraceEvent],
    values: Sequence[int],
    execute: Callable[[Chooser], Any],
    fails_same: Callable[[Any], bool],
    describe: Callable[[Any], str],
    budget: int,
    token_of: Callable[[Any], str] | None = None,
) -> tuple[Race | None, int]:
    """The racing pair of the failing schedule whose trace is ``events`` (``values``: its drawn values in order).
    A deadlocked run's trace may end with pseudo-events marked ``WAITING``: the operations its threads were blocked
    in, which never became steps but are one side of the race (the lock the other thread took first).

    ``execute(chooser)`` runs one schedule and returns the run (its ``.trace``); ``fails_same(run)`` says whether
    it still fails the same way; ``describe(run)`` says what it did instead; ``token_of(run)`` the swapped run's
    token. Returns (race or None, runs spent)."""
    steps = steps_of(events)
    spent = 0
    for i, j, resource in candidates(events):
        if spent >= budget:
            break
        (first, first_nth), (second, second_nth) = steps[i], steps[j]
        spent += 1
        run = execute(SwapChooser(swapped_order(steps, i, j), values))
        a = _position(run.trace, first.tid, first_nth)
        b = _position(run.trace, second.tid, second_nth)
        realised = b is not None and (a is None or b < a)
        if not realised or fails_same(run):
            continue
        race = Race(
            RaceEvent(first.tid, first.op, first.loc, first.step, first_nth),
            RaceEvent(second.tid, second.op, second.loc, second.step, second_nth, second.switch == WAITING),
            resource,
            describe(run),
            token_of(run) if token_of is not None else "",
        )
        return race, spent
    return None, spent


def same_race(race: Race, events: Sequence[TraceEvent]) -> bool:
    """Whether a trace orders ``race``'s two operations the same way (first's op and place before second's, by
    different threads, the two steps conflicting): a failing schedule that does is taken to be another instance of
    that race."""
    first_at: tuple[int, tuple] | None = None
    for event, _nth, touched in steps(events):
        if first_at is None and (event.op, event.loc) == (race.first.op, race.first.loc):
            first_at = (event.tid, touched)
        elif first_at is not None and (event.op, event.loc) == (race.second.op, race.second.loc):
            if event.tid != first_at[0] and conflicts(first_at[1], touched):
                return True
    return False
