"""The racing pair's candidates, found in one pass and ranked before any replay.

A swap is a replay, and a long failing run (10^4-10^5 steps) has as many steps as candidates: so the candidates come
from one walk of the trace that keeps, per object and per thread, the last access of each kind (what vector clocks
would give: the last conflicting access of every other thread), never from a scan back over earlier steps. For a
step, every other thread's latest conflicting step is a candidate: O(steps x threads) pairs at most, each found in
time proportional to the step's accesses and the threads.

They are tried in the order that finds the pair a person would name first (the one dpor's shorter traces name):

1. not on the engine's own bookkeeping (an executor's idle count, a future's condition);
2. on an object the failing check read (the failing thread's last step: ``assert c.count == 2`` reads ``count``);
3. with a write on one side (a change of what the other side saw), not two operations that only look;
4. the program's objects before memory the engine could not name, and of that, two wildcards meeting (the unknown
   memory two bare points stand for) before a wildcard meeting a thread's start or join;
5. latest in the trace first.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from racecheck.runtime.access import FAIRNESS_OBJ
from racecheck.runtime.relation import ENGINE, UNCHANGING, UNNAMED, Relation, active
from racecheck.runtime.steps import Access, Obj, ObjKind, Step
from racecheck.search.dependency import shown
from racecheck.search.race_order import conflict_objects, named

__racecheck_engine__ = True


def latest_conflicts(found: Sequence[Step], relation: Relation | None = None) -> list[tuple[int, int]]:
    """Pairs (i, j) of positions in ``found``: for every step j and every other thread, that thread's latest step
    before j that conflicts with it on an object both name; and the latest earlier step of any other thread that
    conflicts with j at all, through a wildcard too (a wildcard conflicts with everything it covers, so one of those
    per step, as before, not one per thread). Fairness is left out: it orders steps around a yield, no object of the
    program. One pass: per object, per thread, the last position of each distinct access; per thread, the last
    position touching each kind of object and the last with each kind of wildcard."""
    relation = relation or active()
    conflict = relation.conflict
    wildcards = relation.wildcards
    last: dict[Obj, dict[int, dict[Access, int]]] = {}  # object -> thread -> access -> last position
    by_kind: dict[int, dict[ObjKind, int]] = {}  # thread -> kind of object -> last position touching one
    wild: dict[int, dict[ObjKind, int]] = {}  # thread -> wildcard kind -> last position with such an access
    pairs: list[tuple[int, int]] = []
    for j, step in enumerate(found):
        tid = step.event.tid
        best: dict[int, int] = {}  # other thread -> its latest step conflicting with j on a named object
        latest = -1  # the latest step of another thread conflicting with j in any way
        for a in step.accesses:
            obj = a.obj
            if obj is FAIRNESS_OBJ:
                continue
            covered = wildcards.get(obj.kind)
            for t, seen in (last.get(obj, {}).items() if covered is None else ()):
                if t == tid:
                    continue
                top = best.get(t, -1)
                for other, i in seen.items():
                    if i > top and conflict(other, a):
                        top = i
                if top >= 0:
                    best[t] = top
            for t, kinds in (by_kind.items() if covered is not None else ()):
                if t != tid:
                    latest = max(latest, max((i for kind, i in kinds.items() if kind in covered), default=-1))
            for t, kinds in wild.items():
                if t != tid:
                    latest = max(latest, max((i for kind, i in kinds.items() if obj.kind in wildcards[kind]),
                                             default=-1))
        mine = sorted(set(best.values()))
        pairs.extend((i, j) for i in mine)
        if latest >= 0 and latest not in mine and latest > max(mine, default=-1):
            pairs.append((latest, j))
        for a in step.accesses:
            obj = a.obj
            if obj is FAIRNESS_OBJ:
                continue
            last.setdefault(obj, {}).setdefault(tid, {})[a] = j
            by_kind.setdefault(tid, {})[obj.kind] = j
            if obj.kind in wildcards:
                wild.setdefault(tid, {})[obj.kind] = j
    return pairs


def checked_objects(found: Sequence[Step], tid: int | None) -> frozenset[Obj]:
    """What the failing check read: the objects of the failing thread's last step (a check after the last point
    joins the step its thread was running), with the containers of the items among them."""
    if tid is None:
        return frozenset()
    for step in reversed(found):
        if step.event.tid == tid:
            return frozenset(a.obj for a in step.accesses if a.obj is not FAIRNESS_OBJ)
    return frozenset()


def _container(obj: Obj) -> str:
    """``dict#1`` of ``dict#1['port']``, ``Box#1`` of ``Box#1.a``: an item or attribute checked through its holder."""
    text = obj.text
    cut = min((k for k in (text.find("["), text.find(".")) if k > 0), default=-1)
    return text[:cut] if cut > 0 else text


def _writes(kinds: Iterable[tuple[str, str]]) -> bool:
    return any(a not in UNCHANGING or b not in UNCHANGING for a, b in kinds)  # a pair of looks changes nothing


def rank_key(found: Sequence[Step], i: int, j: int, checked: frozenset[Obj],
             checked_names: frozenset[str]) -> tuple[tuple, str]:
    """How candidate (i, j) sorts (the module docstring's order), and the object a report names it by."""
    left, right = found[i].accesses, found[j].accesses
    rank, obj = named(left, right)
    objs = conflict_objects(left, right, wildcards=False)
    kinds = objs.get(obj, ())
    on_check = obj in checked or _container(obj) in checked_names or any(o in checked for o in objs)
    # a wildcard (a bare point: unknown memory) that met a named object of another kind (a join, a lock) explains
    # less than two wildcards meeting: the unknown memory both sides touched
    stray = rank == UNNAMED and not active().is_wildcard(obj)
    key = (rank == ENGINE, not on_check, not _writes(kinds) if kinds else True, rank, stray, -j, -i)
    return key, shown(obj)


def ranked(found: Sequence[Step], checked: frozenset[Obj] = frozenset()) -> list[tuple[int, int, str]]:
    """The candidates (i, j, resource) of ``found``, in the order they are tried."""
    names = frozenset(o.text for o in checked) | frozenset(_container(o) for o in checked if o.is_memory)
    keyed = []
    for i, j in latest_conflicts(found):
        key, resource = rank_key(found, i, j, checked, names)
        keyed.append((key, i, j, resource))
    keyed.sort(key=lambda item: item[0])
    return [(i, j, resource) for _key, i, j, resource in keyed]
