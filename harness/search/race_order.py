"""Whether swapping one pair of steps isolates it: the order that reverses that pair alone, and the check that the
run which followed it reversed nothing else.

"Swapped, the failure goes away" says something about a pair only when nothing else changed: if the swap also
reordered a second pair of conflicting steps, either pair may be what mattered. Two checks make the swap about one
pair:

* Before running (``isolating_order``): the steps that must follow the first step of the pair (its thread's later
  steps, and every step that conflicts with one of those, transitively) are moved after the second step; the rest
  stay before it. When the second step is itself among them (it happens after the first by another path than their
  own conflict), every order that reverses the pair reverses another, and the pair is not tried.
* After running (``other_reversed``): the swapped run's trace is compared with the original's, step by step (a
  thread's steps are matched while they do the same operations at the same places; after a thread's first
  difference its steps are consequences, not causes), and no other pair of conflicting matched steps may appear in
  the other order.

Conflicts are those of the dependency relation (``racecheck.search.dependency``) on objects both steps name. Left
out: the scheduler's fairness (an order of scheduling, no object of the program) and the wildcards (a bare
``racecheck.point()``, a line point, memory the engine could not name), which conflict with everything so that the
search misses nothing, but say nothing of which pair a swap reordered. Two refinements the accesses allow are the
relation's (``racecheck.runtime.relation.REFINEMENTS``: ``Relation.fifo_commutes``, ``Relation.looks_below``): a put
and a get of a first-in first-out queue where the get takes an item queued before that put, and a name made or
removed and a step that only looks below it. This module only counts each queue's puts and gets along a trace
(``queue_counts``), what the FIFO rule reads.

Steps are named across runs by their place (``identities``): the thread, its operations of stand-ins so far, and
memory points since the last of those.

Which pairs a report prefers (``rank``): the program's own objects (files, locks, queues, attributes, items) first,
then memory the engine could not name, then what the stand-ins keep for themselves (``Obj.engine``: an
executor's work queue, lock and idle count, a future's condition) and the scheduler's fairness.
"""

from __future__ import annotations

import re
from bisect import insort
from collections.abc import Sequence

from racecheck.runtime.access import FAIRNESS_OBJ, GET, PUT
from racecheck.runtime.relation import ENGINE, PROGRAM, UNNAMED, Order, Relation, active, most_specific
from racecheck.runtime.relation import report_rank as rank
from racecheck.runtime.steps import Access, Obj, Step
from racecheck.search.dependency import conflicts

__racecheck_engine__ = True

__all__ = ["ENGINE", "PROGRAM", "UNNAMED", "conflict_objects", "fifo_free", "identities", "isolating_order",
           "joint_order", "matched", "memory_step", "named", "one_way", "op_shape", "ordering",
           "other_reversed", "queue_counts", "rank", "reorders", "reversed_pairs"]

_MET_FIRST = re.compile(r"@T\d+#\d+")


def op_shape(op: str) -> str:
    """An operation's text with the names that depend on which thread met an object first (``list@T2#1``, the first
    list thread T2 met) made alike: a swap changes who meets a shared object first, not which operation a step is."""
    return _MET_FIRST.sub("@T*", op) if "@T" in op else op


def named(left: tuple[Access, ...], right: tuple[Access, ...]) -> tuple[int, Obj]:
    """The object a pair of conflicting steps is named by, and its rank: of the objects both name, the best-ranked
    and most specific; when they meet only through a wildcard, the object ``dependency.conflicts`` names (what the
    wildcard met), ranked as unnamed."""
    objs = conflict_objects(left, right, wildcards=False)
    if not objs:
        return UNNAMED, most_specific(conflicts(left, right))
    best = min(rank(obj) for obj in objs)
    return best, most_specific(obj for obj in objs if rank(obj) == best)


def _unknown(obj: Obj, relation: Relation) -> bool:
    """What names no object: the wildcards, and fairness."""
    return obj is FAIRNESS_OBJ or relation.is_wildcard(obj)


def conflict_objects(left: tuple[Access, ...], right: tuple[Access, ...],
                     wildcards: bool = True) -> dict[Obj, set[tuple[str, str]]]:
    """The objects two steps of different threads conflict on (fairness left out), each with the pairs of kinds
    that conflict there (``left``'s kind first). A wildcard is filed under the object it met; ``wildcards=False``
    leaves wildcards out (a bare point, a line point, memory the engine could not name), keeping only conflicts on
    objects both steps name. ``right`` is indexed by object, so a step that joined thousands of accesses costs
    their number, not its square."""
    relation = active()
    found: dict[Obj, set[tuple[str, str]]] = {}
    by_obj: dict[Obj, list[int]] = {}
    wild: list[int] = []
    for k, b in enumerate(right):
        if b.obj is FAIRNESS_OBJ:
            continue
        by_obj.setdefault(b.obj, []).append(k)
        if wildcards and relation.is_wildcard(b.obj):
            wild.append(k)
    everything = sorted(k for ks in by_obj.values() for k in ks) if wildcards else []
    for a in left:
        if a.obj is FAIRNESS_OBJ or not wildcards and _unknown(a.obj, relation):
            continue
        if wildcards and relation.is_wildcard(a.obj):
            pool = everything
        else:
            same = by_obj.get(a.obj, [])
            pool = sorted(same + [k for k in wild if right[k].obj is not a.obj]) if wild else same
        for k in pool:
            b = right[k]
            if relation.conflict(a, b):
                wildcard = a.obj is not b.obj and relation.covers(a.obj, b.obj)
                found.setdefault(b.obj if wildcard else a.obj, set()).add((a.kind, b.kind))
    return found


def queue_counts(found: Sequence[Step]) -> list[dict[Obj, tuple[int, int]]]:
    """For each step, for each FIFO queue it touches: how many steps put on it and got from it before this one."""
    puts: dict[Obj, int] = {}
    gets: dict[Obj, int] = {}
    out: list[dict[Obj, tuple[int, int]]] = []
    fifo = active().fifo_objects  # the kinds of queue the relation's FIFO rule reads (``Relation.fifo_commutes``)
    for step in found:
        touched = step.accesses
        here: dict[Obj, tuple[int, int]] = {}
        for a in touched:
            if a.obj.kind in fifo and a.obj not in here:
                here[a.obj] = (puts.get(a.obj, 0), gets.get(a.obj, 0))
        for obj in here:
            kinds = {a.kind for a in touched if a.obj is obj}
            if PUT in kinds:
                puts[obj] = puts.get(obj, 0) + 1
            if GET in kinds:
                gets[obj] = gets.get(obj, 0) + 1
        out.append(here)
    return out


def fifo_free(obj: Obj, put: tuple[Access, ...], get: tuple[Access, ...], get_counts: tuple[int, int]) -> bool:
    """Whether a put and a get of FIFO queue ``obj`` commute where they met, in a trace where the get came before
    that put (``get_counts``: the puts and gets before it): it took an item queued earlier
    (``Relation.fifo_commutes``)."""
    puts_before, gets_before = get_counts
    return active().fifo_commutes(obj, put, get, gets_before, puts_before)


def ordering(found: Sequence[Step], counts: list[dict[Obj, tuple[int, int]]], x: int, y: int) -> bool:
    """Whether step ``x`` and the later step ``y`` of another thread conflict in the trace ``found`` (an ordering
    edge): a put of a FIFO queue and a later get that took an item put before it do not."""
    put, get = found[x].accesses, found[y].accesses
    objs = conflict_objects(put, get, wildcards=False)
    relation = active()
    for obj in list(objs):
        if relation.looks_below(put, get, obj) or relation.looks_below(get, put, obj):
            del objs[obj]
        # FIFO: the get (its index: the gets of the queue before it) took the item of a put before this one
        elif relation.fifo_commutes(obj, put, get, counts[y].get(obj, (0, 0))[1], counts[x].get(obj, (0, 0))[0]):
            del objs[obj]
    return bool(objs)


def one_way(found: Sequence[Step], i: int, j: int) -> bool:
    """Whether step j needs step i to have run: i starts j's thread, or ends the thread j joins. That order cannot
    be reversed (whatever else the two steps touch), so the pair is never a race."""
    relation = active()
    objs = conflict_objects(found[i].accesses, found[j].accesses)
    return any(relation.order(later, earlier, obj.kind) == Order.ONE_WAY
               for obj, kinds in objs.items() for earlier, later in kinds)


class _Reach:
    """The named objects a set of steps touched, each with those steps, so that a later step is checked only
    against the moved steps that touch one of its objects (not against every one of them)."""

    def __init__(self) -> None:
        self.steps: dict[Obj, list[int]] = {}
        self.relation = active()

    def add(self, k: int, touched: tuple[Access, ...]) -> None:
        for a in touched:
            if not _unknown(a.obj, self.relation):
                at = self.steps.setdefault(a.obj, [])
                if not at or at[-1] != k:
                    at.append(k)

    def meeting(self, touched: tuple[Access, ...]) -> list[int]:
        """The steps added so far that touch an object of ``touched``, each once, in order."""
        seen: set[int] = set()
        for a in touched:
            seen.update(self.steps.get(a.obj, ()))
        return sorted(seen)


def isolating_order(found: Sequence[Step], i: int, j: int,
                    counts: list[dict[Obj, tuple[int, int]]] | None = None) -> list[int] | None:
    """The steps of ``found`` (their positions) in an order that puts step j before step i and keeps every other
    conflicting pair in its order: the steps between them that happen after i (its thread's, and what conflicts
    with those) move after j with it. None when j itself happens after i by another path, or the two only enable
    one another: then no order reverses this pair alone. ``counts``: ``queue_counts(found)``, when the caller
    tries many pairs of one trace."""
    if one_way(found, i, j):
        return None
    if counts is None:
        counts = queue_counts(found)
    threads = {found[i].tid}
    reach = _Reach()
    reach.add(i, found[i].accesses)
    moved: list[int] = []
    for k in range(i + 1, j + 1):
        tid = found[k].tid
        tainted = tid in threads or any(
            found[t].tid != tid and ordering(found, counts, t, k)
            for t in reach.meeting(found[k].accesses) if not (t == i and k == j))
        if not tainted:
            continue
        if k == j:
            return None
        moved.append(k)
        threads.add(tid)
        reach.add(k, found[k].accesses)
    held = set(moved)
    kept = [k for k in range(i + 1, j) if k not in held]
    return [*range(i), *kept, j, i, *moved, *range(j + 1, len(found))]


def joint_order(found: Sequence[Step], i: int, j: int,
                counts: list[dict[Obj, tuple[int, int]]] | None = None) -> list[int] | None:
    """Where no order reverses the pair (i, j) alone (j happens after i by another path too): the order that puts j,
    with every step between them that j happens after (its thread's earlier steps, and what those conflict with,
    transitively), before i, everything else kept. It reverses i against each of those steps that conflicts with
    it: the pairs that decide together. None when j needs a later step of i's own thread, or i enables one of them."""
    if one_way(found, i, j):
        return None
    if counts is None:
        counts = queue_counts(found)
    first = found[i].tid
    pulled = [j]
    threads = {found[j].tid}
    reach = _Reach()
    reach.add(j, found[j].accesses)
    for k in range(j - 1, i, -1):
        tid = found[k].tid
        needed = tid in threads or any(
            found[t].tid != tid and ordering(found, counts, k, t) for t in reach.meeting(found[k].accesses))
        if not needed:
            continue
        if tid == first or one_way(found, i, k):
            return None
        pulled.append(k)
        threads.add(tid)
        reach.add(k, found[k].accesses)
    pulled.sort()
    held = set(pulled)
    rest = [k for k in range(i, j + 1) if k not in held]
    return [*range(i), *pulled, *rest, *range(j + 1, len(found))]


def reversed_pairs(original: Sequence[Step], swapped: Sequence[Step], limit: int) -> list[tuple[int, int]]:
    """Up to ``limit`` pairs of conflicting steps (positions in ``original``) that the swapped run ran in the other
    order, in the order the walk meets them (``other_reversed``'s walk, not stopping at the first)."""
    where = matched(original, swapped)
    at = [where.get(ident) for ident in identities(original)]
    counts = queue_counts(swapped)
    relation = active()
    walked = sorted((position, x) for x, position in enumerate(at) if position is not None)
    seen: dict[Obj, list[int]] = {}  # as in ``other_reversed``
    found: list[tuple[int, int]] = []
    for _position, x in walked:
        left = original[x].accesses
        objs = {a.obj for a in left if not _unknown(a.obj, relation)}
        later: set[int] = set()
        for obj in objs:
            positions = seen.get(obj, ())
            for k in range(len(positions) - 1, -1, -1):
                if positions[k] <= x:
                    break
                later.add(positions[k])
        for y in sorted(later):
            if original[x].tid != original[y].tid and reorders(left, original[y].accesses, counts[at[y]]):
                found.append((x, y))
                if len(found) >= limit:
                    return found
        for obj in objs:
            insort(seen.setdefault(obj, []), x)
    return found


Place = tuple[int, int, int]  # (thread, its operations of stand-ins so far, memory points since the last one)


def memory_step(access: tuple[Access, ...]) -> bool:
    """Whether a step is a plain memory access (a point only where another thread could run), by what it touches
    first (nothing, for an access to memory its thread keeps to itself); every other step (a stand-in's
    operation, a thread's first step) is one in every schedule."""
    return not access or access[0].obj.is_memory


def identities(found: Sequence[Step]) -> list[Place]:
    """What names each step in every schedule (its place): its thread, how many of that thread's steps that are
    operations of stand-ins (locks, queues, files, threads) came before it, and for a memory access, how many
    scheduling points (``TraceEvent.at``, which counts memory accesses that joined a step too) after the last of
    those. A memory access is a step only where another thread could run, and code may make more or fewer of them
    from one run to the next (a cache filled by an earlier run), so they are counted only from the last operation
    of a stand-in. A trace without points (made by hand) names each step by its thread's step number."""
    if not all(step.event.at >= 0 for step in found):
        return [(step.event.tid, step.nth, 0) for step in found]
    tracker = PlaceTracker()
    out = []
    for step in found:
        event = step.event
        out.append(tracker.place(event.tid, event.at, step.accesses))
        tracker.advance(event.tid, event.at, step.accesses)
    return out


class PlaceTracker:
    """Counts, thread by thread, the operations of stand-ins a run made so far (``identities``)."""

    def __init__(self) -> None:
        self.anchors: dict[int, int] = {}
        self.last_at: dict[int, int] = {}

    def place(self, tid: int, at: int, access: tuple[Access, ...]) -> Place:
        """The place of the step thread ``tid`` makes at point ``at``, touching ``access``."""
        done = self.anchors.get(tid, 0)
        if memory_step(access):
            return tid, done - 1, at - self.last_at.get(tid, 0)
        return tid, done, 0

    def advance(self, tid: int, at: int, access: tuple[Access, ...]) -> None:
        """Thread ``tid`` made the step at point ``at``."""
        if not memory_step(access):
            self.anchors[tid] = self.anchors.get(tid, 0) + 1
            self.last_at[tid] = at


def matched(original: Sequence[Step], swapped: Sequence[Step]) -> dict[Place, int]:
    """Place (``identities``) -> position in ``swapped`` for the steps both traces share: a thread's steps while
    they do the same operation at the same place as in the original, up to its first difference (a point the
    original ran inside a step, where no other thread could run, is no difference)."""
    ops = {ident: (op_shape(step.event.op), step.event.loc)
           for ident, step in zip(identities(original), original, strict=True)}
    diverged: set[int] = set()
    out: dict[tuple[int, int], int] = {}
    for position, (ident, step) in enumerate(zip(identities(swapped), swapped, strict=True)):
        event = step.event
        if event.tid in diverged or ident not in ops:
            continue
        if ops[ident] == (op_shape(event.op), event.loc):
            out[ident] = position
        else:
            diverged.add(event.tid)
    return out


def other_reversed(original: Sequence[Step], swapped: Sequence[Step], i: int, j: int) -> tuple[int, int] | None:
    """A pair of conflicting steps, other than (i, j), that the swapped run ran in the other order (positions in
    ``original``), or None: then the swap reversed that pair alone.

    One walk of the matched steps in the swapped run's order: a step at original position p meets, per object it
    touches, the steps already walked with a later original position (they ran first here, after it there); only
    those are compared, latest original position first, so a trace of 10^5 steps costs about its length."""
    where = matched(original, swapped)
    at = [where.get(ident) for ident in identities(original)]
    counts = queue_counts(swapped)
    relation = active()
    walked = sorted((position, x) for x, position in enumerate(at) if position is not None)
    seen: dict[Obj, list[int]] = {}  # object -> original positions of the walked steps touching it, sorted
    for _position, x in walked:
        left = original[x].accesses
        objs = {a.obj for a in left if not _unknown(a.obj, relation)}
        for obj in objs:
            later = seen.get(obj, ())
            for k in range(len(later) - 1, -1, -1):  # only those after x in the original: few, unless reordered
                y = later[k]
                if y <= x:
                    break
                if original[x].tid != original[y].tid and (x, y) != (i, j) and reorders(
                        left, original[y].accesses, counts[at[y]]):
                    return x, y
        for obj in objs:
            insort(seen.setdefault(obj, []), x)
    return None


def reorders(left: tuple[Access, ...], right: tuple[Access, ...], get_counts: dict[Obj, tuple[int, int]]) -> bool:
    """Whether steps ``left`` (earlier in the original) and ``right`` conflict on an object both name, where the
    swapped run ran ``right`` first (``get_counts``: its queue counts there)."""
    objs = conflict_objects(left, right, wildcards=False)
    relation = active()
    for obj in list(objs):
        if (relation.looks_below(left, right, obj) or relation.looks_below(right, left, obj)
                or fifo_free(obj, left, right, get_counts.get(obj, (0, 0)))):
            del objs[obj]
    return bool(objs)
