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
from racecheck.runtime.relation import active, shown
from racecheck.runtime.steps import Obj
from racecheck.runtime.trace import TraceEvent, normalize_addresses
from racecheck.search.dependency import conflicts, steps
from racecheck.search.race_candidates import ranked
from racecheck.search.race_order import (
    ENGINE,
    Place,
    PlaceTracker,
    conflict_objects,
    identities,
    isolating_order,
    joint_order,
    matched,
    named,
    op_shape,
    other_reversed,
    queue_counts,
    reversed_pairs,
)

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
    within: str = ""  # the operation of the step ``op`` joined, when ``op`` is an access inside another's step
    name: str = ""  # its process and thread where the run had child processes ("P1.T0"), else ""

    def __str__(self) -> str:
        where = f" @{self.loc}" if self.loc else ""
        state = " (waiting)" if self.waiting else ""
        inside = f" (in {self.within})" if self.within else ""
        who = f"T{self.tid} ({self.name})" if self.name else f"T{self.tid}"
        return normalize_addresses(f"{who} {self.op}{state}{inside}{where}")


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


def candidates(events: Sequence[TraceEvent], checked: frozenset[Obj] = frozenset()) -> list[tuple[int, int, str]]:
    """Pairs (i, j, resource) of positions in ``dependency.steps(events)``: for every step j and every other thread,
    that thread's latest earlier step that conflicts with it (its own accesses and its notes'), and the object they
    conflict on as a report names it, in the order they are tried (``race_candidates``: off the engine's
    bookkeeping, on what the failing check read (``checked``), with a write, the program's objects, latest first)."""
    return ranked(steps(events), checked)


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
        self.ops = {place: op_shape(op) for place, op in self.order}
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
        self.done: set[Place] = set()  # the places of the steps the run made so far
        self.cursor = 0  # the order's entries before it are made: a decision looks from here on

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
                if self.by_place:
                    self.done.add(self.tracker.place(event.tid, event.at, event.access))
                else:
                    self.done.add((event.tid, self.steps.get(event.tid, 0), 0))
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
            if expected is not None and expected != op_shape(thread.op):
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
        order, done = self.order, self.done
        while self.cursor < len(order) and order[self.cursor][0] in done:
            self.cursor += 1  # a place made never comes again (a thread's places only grow): skipped for good
        for place, _op in order[self.cursor:]:
            tid = place[0]
            if tid in positions and pending.get(tid) == place:
                return positions[tid]
        return 0

    def pick_value(self, n, label):
        value = self.values[self.value_position] if self.value_position < len(self.values) else 0
        self.value_position += 1
        return value if value < n else 0


@dataclass
class PairSearch:
    """What naming the racing pair came to: the race, or why none was named (``note``: the budget ran out, swaps
    were cut short at their step cap, or no single swap decides the failure, with the pairs tried), and the swaps
    run."""

    race: Race | None
    spent: int
    note: str = ""


NO_SINGLE_PAIR = "no single racing pair decides this failure"
LEFT_UNNAMED = "racing pair left unnamed"
PAIRS_SHOWN = 3  # pairs a "no single pair" note names


def cut_words(cut_short: Sequence[str], count: int) -> str:
    """How a note says that ``count`` swaps (the pairs ``cut_short`` among them) ended at their step cap: such a
    swap neither failed nor passed, so it decides nothing either way."""
    pairs = f" ({'; '.join(cut_short[:PAIRS_SHOWN])})" if cut_short else ""
    return f"{count} swap{'s' if count != 1 else ''} cut short at the step cap decided nothing{pairs}"


def side(step: Any, obj: Obj | None, kinds: Sequence[str]) -> tuple[str, str]:
    """How a race names one step's side: its operation, or, where the pair's object was touched only by a memory
    access that joined the step another operation began (``TraceEvent.marks``: made where no other thread could
    run, a write inside a real lock's critical section), that access (``write dict#1['port']``) and the operation
    of the step it joined."""
    event = step.event
    joined = len(event.marks)
    own = event.access[:len(event.access) - joined] if joined else event.access
    if obj is None or not kinds or not joined or any(a.obj is obj for a in own):
        return event.op, ""
    if not any(a.obj is obj for a in event.access[len(event.access) - joined:]):
        return event.op, ""
    return f"{active().word(obj, kinds[0])} {shown(obj)}", event.op


def race_event(found: Sequence[Any], k: int, obj: Obj | None, kinds: Sequence[str], waiting: bool = False) -> RaceEvent:
    """One side of a pair: step ``k`` of ``found`` as a report names it."""
    step = found[k]
    op, within = side(step, obj, kinds)
    event = step.event
    return RaceEvent(event.tid, op, event.loc, event.step, step.nth, waiting, within)


def find_race(
    events: Sequence[TraceEvent],
    values: Sequence[int],
    execute: Callable[[Chooser], Any],
    fails_same: Callable[[Any], bool],
    describe: Callable[[Any], str],
    budget: int,
    token_of: Callable[[Any], str] | None = None,
) -> tuple[Race | None, int]:
    """``search_pair`` without the checked objects or a work budget: (race or None, runs spent)."""
    found = search_pair(events, values, execute, fails_same, describe, budget, token_of)
    return found.race, found.spent


def search_pair(
    events: Sequence[TraceEvent],
    values: Sequence[int],
    execute: Callable[[Chooser], Any],
    fails_same: Callable[[Any], bool],
    describe: Callable[[Any], str],
    budget: int,
    token_of: Callable[[Any], str] | None = None,
    checked: frozenset[Obj] = frozenset(),
    more: Callable[[], bool] | None = None,
    cut: Callable[[Any], bool] | None = None,
) -> PairSearch:
    """The racing pair of the failing schedule whose trace is ``events`` (``values``: its drawn values in order).
    A deadlocked run's trace may end with pseudo-events marked ``WAITING``: the operations its threads were blocked
    in, which never became steps but are one side of the race (the lock the other thread took first).

    ``execute(chooser)`` runs one schedule and returns the run (its ``.trace``); ``fails_same(run)`` says whether
    it still fails the same way; ``describe(run)`` says what it did instead; ``token_of(run)`` the swapped run's
    token; ``checked``: the objects the failing check read (tried first); ``more()``: whether the work budget
    allows another swap (``budget`` counts swaps); ``cut(run)``: whether a swap ended at a step cap the search set
    (``post_budget.capped``), which makes it undecided: neither evidence that the pair decides nor that it does not.
    No note claims that no single pair decides while a swap was cut short."""
    found = steps(events)
    names = identities(found)
    counts = queue_counts(found)
    by_place = all(event.at >= 0 for event, _, _ in found)
    spent = 0
    tried: list[str] = []
    tied: list[tuple[int, int, str]] = []  # candidates no swap reverses alone, for the joint swaps
    cut_short: list[str] = []  # the pairs whose swap ended at its step cap, as a note names them
    cuts = 0

    def was_cut(run: Any) -> bool:
        nonlocal cuts
        if cut is None or not cut(run):
            return False
        cuts += 1
        return True

    def unnamed(why: str) -> str:
        return f"{LEFT_UNNAMED}: {why}" + (f"; {cut_words(cut_short, cuts)}" if cuts else "")

    def swap(order: list[int]) -> Any:
        return execute(SwapChooser([(names[k], found[k].event.op) for k in order], values, by_place))

    def pair_text(i: int, j: int, resource: str) -> tuple[RaceEvent, RaceEvent, str]:
        rank, obj = named(found[i].accesses, found[j].accesses)
        kinds = sorted(conflict_objects(found[i].accesses, found[j].accesses, wildcards=False).get(obj, ()))
        first = race_event(found, i, obj, [a for a, _ in kinds])
        second = race_event(found, j, obj, [b for _, b in kinds], found[j].event.switch == WAITING)
        return first, second, f"{first} / {second} on {resource}" if rank != ENGINE else ""

    for i, j, resource in candidates(events, checked):
        if spent >= budget or more is not None and not more():
            return PairSearch(None, spent, unnamed(f"the budget ran out after {spent} swaps"))
        order = isolating_order(found, i, j, counts)
        if order is None:
            tied.append((i, j, resource))
            continue  # every order that reverses this pair reverses another: its swap would isolate nothing
        spent += 1
        run = swap(order)
        if was_cut(run):
            text = pair_text(i, j, resource)[2]
            if text:
                cut_short.append(text)
            continue
        swapped = steps(run.trace)
        if not _reversed(found, swapped, i, j) or other_reversed(found, swapped, i, j) is not None:
            continue
        first, second, text = pair_text(i, j, resource)
        if fails_same(run):
            if text and len(tried) < PAIRS_SHOWN:
                tried.append(text)
            continue
        return PairSearch(Race(first, second, resource, describe(run), token_of(run) if token_of else ""), spent)
    for i, j, _resource in tied:  # no pair decides alone: do the pairs that a joint swap reverses, together?
        if spent >= budget or more is not None and not more():
            break
        order = joint_order(found, i, j, counts)
        if order is None:
            continue
        spent += 1
        run = swap(order)
        if was_cut(run) or not _reversed(found, steps(run.trace), i, j) or fails_same(run):
            continue
        pairs = [pair_text(x, y, shown(named(found[x].accesses, found[y].accesses)[1]))[2]
                 for x, y in reversed_pairs(found, steps(run.trace), PAIRS_SHOWN)]
        together = "; ".join(text for text in pairs if text)
        if cuts:
            return PairSearch(None, spent, unnamed(f"these pairs swapped together make it pass ({together})"))
        return PairSearch(None, spent, f"{NO_SINGLE_PAIR}: no single swap makes it pass; these pairs swapped "
                                       f"together do ({together})")
    still = f"swapped alone, {'the others' if cuts else 'each'} still fail{'' if cuts else 's'} ({'; '.join(tried)})"
    if cuts:
        return PairSearch(None, spent, unnamed(still) if tried else f"{LEFT_UNNAMED}: {cut_words(cut_short, cuts)}")
    if not tried:
        return PairSearch(None, spent)
    return PairSearch(None, spent, f"{NO_SINGLE_PAIR}: {still}")


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
