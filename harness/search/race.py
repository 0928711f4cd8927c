"""Name the racing pair: the two conflicting operations whose order decides a failure.

A shrunk schedule still shows every step; a person wants the one ordering that matters. After shrinking, every
pair of *conflicting* steps (two threads, one object, kinds that do not commute: ``racecheck.search.dependency``,
read from the accesses each step recorded) that are neighbours in that object's history is a candidate. Each
candidate is tested by running the schedule with that pair reversed and every other conflicting pair kept in its
order (``racecheck.search.race_order``: the order is planned so, and the swapped run's trace is checked to have
done so), so that "swapped, the failure goes away" is about that pair alone. Candidates on the program's own
objects (files, locks, queues, attributes, items) are tried before the engine's bookkeeping (an executor's idle
count, a future's condition), latest in the trace first within each; the first whose swap isolates it and removes
the failure is the race.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from racecheck.runtime.chooser import Chooser, Decision, RunView
from racecheck.runtime.trace import TraceEvent, normalize_addresses
from racecheck.search.dependency import conflicts, shown, steps
from racecheck.search.race_order import Place, PlaceTracker, identities, isolating_order, matched, named, other_reversed

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
    name: str = ""  # its process and thread where the run had child processes ("P1.T0"), else ""

    def __str__(self) -> str:
        where = f" @{self.loc}" if self.loc else ""
        state = " (waiting)" if self.waiting else ""
        who = f"T{self.tid} ({self.name})" if self.name else f"T{self.tid}"
        return normalize_addresses(f"{who} {self.op}{state}{where}")


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


def candidates(events: Sequence[TraceEvent]) -> list[tuple[int, int, str]]:
    """Pairs (i, j, resource) of positions in ``dependency.steps(events)``: for every step j, the latest earlier step of
    another thread that conflicts with it (its own accesses and its notes'), and the object they conflict on as a
    report names it. Pairs on the program's objects come first, then unnamed memory, then the engine's bookkeeping
    (``race_order.rank``); latest j first within each."""
    found = steps(events)
    pairs: list[tuple[int, int, int, str]] = []
    for j in range(len(found) - 1, 0, -1):
        later, touched = found[j].event, found[j].accesses
        for i in range(j - 1, -1, -1):
            earlier, before = found[i].event, found[i].accesses
            if earlier.tid == later.tid:
                continue
            if conflicts(before, touched):
                rank, obj = named(before, touched)
                pairs.append((rank, i, j, shown(obj)))
                break
    pairs.sort(key=lambda pair: pair[0])  # stable: latest first within a rank
    return [(i, j, resource) for _rank, i, j, resource in pairs]


class SwapChooser(Chooser):
    """Follows an order of steps, each named by its place (``race_order.identities``) and operation, as closely as
    the program allows: at each decision, the first step of ``order`` whose thread is about to make exactly that
    step and can run; a thread in the middle of a step (at a memory access the original ran inside it) goes on.
    A thread about to do something else than the order says at that place has left the original run (the swap
    changed what it saw): it runs only where no thread can follow the order, so the rest of the run keeps the
    original order as far as the program allows. Past the order, the current thread goes on. ``by_place=False``:
    the order names steps by (thread, step number, 0), as ``identities`` does for a trace without points. Values
    (fault and data choices) replay the original ones in sequence."""

    def __init__(self, order: Sequence[tuple[Place, str]], values: Sequence[int], by_place: bool = True) -> None:
        self.made = (order, values, by_place)
        self.view: RunView | None = None
        self.order = list(order)
        self.ops = dict(self.order)
        self.values = list(values)
        self.value_position = 0
        self.by_place = by_place
        self.starts: dict[int, list[tuple[int, int]]] = {}  # thread -> where its steps in the order start
        for (tid, anchor, offset), _op in self.order:
            self.starts.setdefault(tid, []).append((anchor, offset))
        for places in self.starts.values():
            places.sort()
        self.tracker = PlaceTracker()
        self.seen = 0  # events of the run's trace counted into the tracker
        self.steps: dict[int, int] = {}  # thread -> steps made (by_place=False)
        self.left: set[int] = set()  # threads that left the original run

    def begin(self, view: RunView) -> None:
        self.view = view

    def fresh(self) -> SwapChooser:
        return SwapChooser(*self.made)

    def _pending(self) -> dict[int, Place]:
        """The place of the step each thread of the run is about to make; marks the threads that left the run."""
        view = self.view
        if view is None:
            return {}
        trace = view.trace
        for event in trace[self.seen:]:
            if event.switch != "info":
                self.tracker.advance(event.tid, event.at, event.access)
                self.steps[event.tid] = self.steps.get(event.tid, 0) + 1
        self.seen = len(trace)
        pending = {}
        for thread in view.pending():
            if self.by_place:
                place = self.tracker.place(thread.tid, thread.points, thread.access)
            else:
                place = (thread.tid, self.steps.get(thread.tid, 0), 0)
            expected = self.ops.get(place)
            if expected is not None and expected != thread.op:
                self.left.add(thread.tid)
            pending[thread.tid] = place
        return pending

    def pick_thread(self, decision: Decision):
        enabled, current = decision.enabled, decision.current
        pending = self._pending()
        positions = {tid: index for index, tid in enumerate(enabled) if tid not in self.left}
        if decision.current_enabled and current in positions and current in pending:
            starts = self.starts.get(current, ())
            here = pending[current][1:]
            index = bisect_right(starts, here)
            if 0 < index and starts[index - 1] < here and starts[index - 1][0] == here[0]:
                return positions[current]  # inside one of the order's steps: it goes on
        for place, _op in self.order:
            tid = place[0]
            if tid in positions and pending.get(tid) == place:
                return positions[tid]
        return 0

    def pick_value(self, n, label):
        value = self.values[self.value_position] if self.value_position < len(self.values) else 0
        self.value_position += 1
        return value if value < n else 0


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
    found = steps(events)
    names = identities(found)
    by_place = all(event.at >= 0 for event, _, _ in found)
    spent = 0
    for i, j, resource in candidates(events):
        if spent >= budget:
            break
        order = isolating_order(found, i, j)
        if order is None:
            continue  # every order that reverses this pair reverses another: its swap would isolate nothing
        (first, first_nth, _), (second, second_nth, _) = found[i], found[j]
        spent += 1
        run = execute(SwapChooser([(names[k], found[k].event.op) for k in order], values, by_place))
        swapped = steps(run.trace)
        if not _reversed(found, swapped, i, j):
            continue
        if other_reversed(found, swapped, i, j) is not None or fails_same(run):
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


def _reversed(original: Sequence[tuple[TraceEvent, int, Any]], swapped: Sequence[tuple[TraceEvent, int, Any]],
              i: int, j: int) -> bool:
    """Whether the swapped run ran the second operation of the pair (the same operation at the same place), and
    before the first (or without it)."""
    where = matched(original, swapped)
    names = identities(original)
    a, b = where.get(names[i]), where.get(names[j])
    return b is not None and (a is None or b < a)


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
