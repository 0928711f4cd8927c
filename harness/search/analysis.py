"""What one execution tells the partial-order search (``racecheck.search.dpor``): its steps, happens-before, its
races, and the races that blocking hides.

A step is a thread's operation at a scheduling point and the code it ran until its next one, with everything it
touched (its notes' accesses included, and the read of the scheduler's fairness every step makes). Happens-before
is program order and conflicts (``racecheck.search.dependency``). The analysis is kept from one execution to the
next (``Analysis``): the search's next execution replays a prefix of the last one, so only the steps after the
shared prefix are analysed again.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from typing import Any

from racecheck.runtime.access import ACQUIRE, FAIRNESS_READ, LIST, READ, RELEASE, Access
from racecheck.search.dependency import ENABLING, only_enables
from racecheck.search.dependency import KINDS_CONFLICT as CONFLICT

__racecheck_engine__ = True

Accesses = tuple[Access, ...]
_LOOKING = frozenset({READ, LIST})  # kinds that commute with each other: a look conflicts only with a change
_NONE: tuple[list, list] = ([], [])
_ENABLERS = frozenset(first for first, _ in ENABLING)  # a conflict can only enable when the earlier step has one


class Step:
    """A completed step of an execution: the thread, the trace step number (-1 for what a thread was about to do
    when the analysis stops) and everything the step touched."""

    __slots__ = ("tid", "number", "accesses")

    def __init__(self, tid: int, number: int, accesses: Accesses) -> None:
        self.tid = tid
        self.number = number
        self.accesses = accesses


def steps_of(trace: Sequence[Any], complete: bool = True) -> list[Step]:
    """The steps of a trace, each with its own access and those of the notes (releases, notifies) its thread made
    before the next step, and the read of the scheduler's fairness every step makes (a step that ends in a yield
    writes it). ``complete=False`` leaves out the last step: its thread is still running it."""
    steps: list[Step] = []
    for event in trace:
        if event.switch == "info":
            if steps and steps[-1].tid == event.tid:
                steps[-1].accesses += event.access
            continue
        steps.append(Step(event.tid, event.step, (*event.access, FAIRNESS_READ)))
    if not complete and steps:
        steps.pop()
    return steps


class Analysis:
    """Happens-before over an execution's steps, built step by step and rewound to a shared prefix.

    ``before[j]`` has bit ``i`` set when step i happens before step j (steps number in the hundreds: ints are the
    cheapest sets). Of another thread's earlier steps only its latest conflicting one can race with a step (its
    earlier ones come before that one), so each object keeps, per thread and kind, the last access; and, for the
    waiting rule, every access with its step's position, and apart those that are not reads. Every change a step
    makes to these is logged, so ``rewind`` undoes the steps after a prefix."""

    def __init__(self) -> None:
        self.steps: list[Step] = []
        self.before: list[int] = []
        self.last_of: dict[int, int] = {}
        self.latest: dict[str, dict[int, dict[str, int]]] = {}  # object -> thread -> kind -> last step
        self.every: dict[str, tuple[list[tuple[int, Access]], list[int]]] = {}
        self.changes: dict[str, tuple[list[tuple[int, Access]], list[int]]] = {}
        self.previous: list[int] = []  # per step, its thread's step before it (-1: none)
        self._undo: list[tuple[int | None, list[tuple[str, int, str, int | None]]]] = []

    def shared(self, steps: Sequence[Step], limit: int) -> int:
        """How many of ``steps`` (at most ``limit``) are the steps already analysed."""
        mine = self.steps
        n = min(limit, len(mine), len(steps))
        for k in range(n):
            a, b = mine[k], steps[k]
            if a.tid != b.tid or a.number != b.number or a.accesses != b.accesses:
                return k
        return n

    def rewind(self, n: int) -> None:
        """Forget the steps after the first ``n``."""
        while len(self.steps) > n:
            step = self.steps.pop()
            self.before.pop()
            self.previous.pop()
            previous, changes = self._undo.pop()
            if previous is None:
                self.last_of.pop(step.tid, None)
            else:
                self.last_of[step.tid] = previous
            for obj, tid, kind, old in reversed(changes):
                if old is None:
                    del self.latest[obj][tid][kind]
                else:
                    self.latest[obj][tid][kind] = old
            for access in reversed(step.accesses):
                for table in (self.every, self.changes) if access.kind != READ else (self.every,):
                    entries, at = table[access.obj]
                    entries.pop()
                    at.pop()

    def add(self, step: Step, report: bool) -> list[tuple[int, int]]:
        """Take ``step`` as the next one; with ``report``, its races: every earlier step i of another thread that
        conflicts with it and is not ordered before it through other steps (so the pair could run the other way
        round), a start and its thread's first step or an end and a join excepted (never the other way)."""
        j = len(self.steps)
        tid = step.tid
        before = self.before
        latest = self.latest
        changes_of = self.changes
        conflicting: set[int] = set()
        for access in step.accesses:
            obj = access.obj
            threads = latest.get(obj)
            if not threads:
                continue
            kind = access.kind
            if kind in _LOOKING and not changes_of.get(obj, _NONE)[0]:
                continue  # nobody changed the object yet: a look conflicts with nothing before it
            for other, kinds in threads.items():
                if other == tid:
                    continue
                best = -1
                for earlier_kind, i in kinds.items():
                    if i > best and CONFLICT[(earlier_kind, kind)]:
                        best = i
                if best >= 0:
                    conflicting.add(best)
        previous = self.last_of.get(tid)
        own = 0 if previous is None else before[previous] | (1 << previous)
        closure = own
        direct = sorted(conflicting, reverse=True)
        found = []
        later = own  # what the steps already seen (the thread's own past, later direct conflicts) come after
        for i in direct:
            if report and not (later >> i) & 1:
                earlier = self.steps[i].accesses
                if not (any(a.kind in _ENABLERS for a in earlier) and only_enables(earlier, step.accesses)):
                    found.append((i, j))
            later |= before[i]
            closure |= before[i] | (1 << i)
        found.reverse()
        self.steps.append(step)
        before.append(closure)
        self.previous.append(-1 if previous is None else previous)
        self.last_of[tid] = j
        changes = []
        every = self.every
        for access in step.accesses:
            obj, kind = access.obj, access.kind
            threads = latest.get(obj)
            if threads is None:
                threads = latest[obj] = {}
            kinds = threads.get(tid)
            if kinds is None:
                kinds = threads[tid] = {}
            changes.append((obj, tid, kind, kinds.get(kind)))
            kinds[kind] = j
            entries, at = every.get(obj) or every.setdefault(obj, ([], []))
            entries.append((j, access))
            at.append(j)
            if kind != READ:
                entries, at = changes_of.get(obj) or changes_of.setdefault(obj, ([], []))
                entries.append((j, access))
                at.append(j)
        self._undo.append((previous, changes))
        return found

    def waiting_races(self, fresh: int = 0) -> list[tuple[int, int]]:
        """Races a blocking operation hides (Flanagan and Godefroid's rule for disabled transitions), as pairs
        (i, j) with ``j >= fresh``: while j's thread waited at j (from its previous step on), every step i of
        another thread that conflicts with j; and the last such step before that, unless it happens before the
        wait began. A get that found the queue emptied by another thread's get, and ran once that thread put the
        item back, races with that get, though the put orders the two: at the decision before the get, j's
        thread could have gone first."""
        steps, before = self.steps, self.before
        found: list[tuple[int, int]] = []
        for j in range(fresh, len(steps)):
            step = steps[j]
            p = step.tid
            start = self.previous[j]
            since = None if start < 0 else start
            pairs: set[int] = set()
            for access in step.accesses:
                found_here = (self.changes if access.kind == READ else self.every).get(access.obj)
                if not found_here:
                    continue
                entries, at = found_here
                low, high = bisect_right(at, start), bisect_left(at, j)
                for k, earlier in entries[low:high]:
                    if steps[k].tid != p and _may_race(earlier, access):
                        pairs.add(k)
                for k, earlier in reversed(entries[:low]):  # the last conflicting step before the wait
                    if steps[k].tid != p and _may_race(earlier, access):
                        if since is None or not (before[since] >> k) & 1:
                            pairs.add(k)
                        break
            found.extend((i, j) for i in sorted(pairs))
        return found


def happens_before(steps: Sequence[Step], fresh: int = 0) -> tuple[list[int], list[tuple[int, int]]]:
    """Happens-before over ``steps`` and the races of the steps from ``fresh`` on (``Analysis`` in one go)."""
    analysis = Analysis()
    found = []
    for j, step in enumerate(steps):
        found += analysis.add(step, j >= fresh)
    return analysis.before, found


def _may_race(earlier: Access, later: Access) -> bool:
    """Two accesses of one object that conflict and could go either way."""
    pair = (earlier.kind, later.kind)
    return pair not in ENABLING and CONFLICT[pair]


def initials(steps: Sequence[Step], before: Sequence[int], i: int, j: int) -> list[int]:
    """The threads that could start the reversal of race (i, j) at the decision before i (Abdulla et al.'s
    initials of notdep(i).j): the steps after i that do not happen after i, then j; a thread is an initial when
    its first step in that sequence has no step of the sequence before it in happens-before. (Within that
    sequence happens-before and a chain of direct conflicts coincide: a step between two of its steps that
    happens after i would put the later one after i too.)"""
    found: list[int] = []
    seen: set[int] = set()
    earlier = 0  # the steps of the sequence so far, as bits
    for k in range(i + 1, len(steps)):
        if k == j or (before[k] >> i) & 1:
            continue
        tid = steps[k].tid
        if tid not in seen:
            seen.add(tid)
            if not before[k] & earlier:
                found.append(tid)
        earlier |= 1 << k
    tid = steps[j].tid
    if tid not in seen and not before[j] & earlier:
        found.append(tid)
    return found


def lock_holds(steps: Sequence[Step]) -> dict[str, list[tuple[int, int, int]]]:
    """Who held each lock when: per object, (acquiring step, releasing step, thread) for every hold, read from the
    ACQUIRE and RELEASE accesses (re-entrant acquires by the holder nest; a hold never released ends after the
    last step). At the decision before step k, the lock was held by that thread when a < k <= r."""
    open_holds: dict[tuple[str, int], list[int]] = {}  # (object, thread) -> [acquiring step, depth]
    holds: dict[str, list[tuple[int, int, int]]] = {}
    for index, step in enumerate(steps):
        for access in step.accesses:
            if access.kind == ACQUIRE:
                found = open_holds.get((access.obj, step.tid))
                if found is None:
                    open_holds[(access.obj, step.tid)] = [index, 1]
                else:
                    found[1] += 1
            elif access.kind == RELEASE:
                found = open_holds.get((access.obj, step.tid))
                if found is not None:
                    found[1] -= 1
                    if found[1] == 0:
                        del open_holds[(access.obj, step.tid)]
                        holds.setdefault(access.obj, []).append((found[0], index, step.tid))
    for (obj, tid), (start, _depth) in sorted(open_holds.items()):
        holds.setdefault(obj, []).append((start, len(steps), tid))
    return holds


def blocked_since(steps: Sequence[Step], holds: dict[str, list[tuple[int, int, int]]], i: int, j: int) -> list[int]:
    """Where a race (i, j) must really be reversed when j takes a lock: j's thread could not take it at the
    decision before i while another thread held it, so the order to try is j before that thread's acquire."""
    found = []
    for access in steps[j].accesses:
        if access.kind != ACQUIRE:
            continue
        for start, end, tid in holds.get(access.obj, ()):
            if start < i <= end and tid != steps[j].tid and start not in found:
                found.append(start)
    return found


def at_the_block(steps: Sequence[Step], blocked: int) -> list[Step]:
    """A run that ran into a sleeping thread at step ``blocked``, as far as the search reads it: its steps before
    that, then what each thread was about to do there (its next step, as a pseudo-step). Past the block it repeats
    a class an earlier sibling covered; what the waiting threads were about to do still says where they could
    have gone first (as Flanagan and Godefroid analyse every state reached, the blocked one included)."""
    kept = [step for step in steps if 0 <= step.number < blocked]
    nexts: dict[int, Step] = {}
    for step in steps:
        if (step.number >= blocked or step.number < 0) and step.tid not in nexts:
            nexts[step.tid] = Step(step.tid, -1, step.accesses)
    return kept + list(nexts.values())
