"""The dependency relation: which two steps of different threads commute, and which conflict.

Two steps conflict when they touch one object and their kinds do not commute on it; two steps commute when every
pair of their accesses does. The relation reads only the structured accesses the primitives and the fake
filesystem record (``racecheck.runtime.access``), never display text. Why each pair is what it is:

* Reads of one object commute (``is_set``, ``qsize``, ``stat``, reading a file, looking a directory up): neither
  changes what the other sees.
* Operations on different objects commute: writes and creates of different files, two locks, two queues.
* A directory's entries: a name appearing or vanishing (create, remove, rename, mkdir, rmdir) commutes with other
  names' changes in the same directory (each touches its own file object as well, so two changes of one name
  still conflict there), but conflicts with a listing of the directory, whose result it changes.
* A lock, queue, event, condition, future or semaphore: every other pair on the same object conflicts
  (acquire/acquire decide who gets it, acquire/release enable each other, put/put and get/get decide the order,
  put/get decide what is got, set/wait and notify/wait decide who wakes).
* A thread: its ``start`` conflicts with its first step, its end with a ``join`` on it; these can only go one way
  (``ENABLING``): they order steps but are never races to reverse. A join and the thread's first step never meet.
* Plain shared memory: a bare ``racecheck.point()`` marks the code on both sides of it (its thread's steps before
  and after) as touching shared memory, so two such steps of different threads conflict;
  ``racecheck.point(name, on=obj)`` names what they touch instead. An executor's work item (and a done callback)
  runs between the pool's own points, where the program cannot put one: its step touches shared memory too.
* Virtual time: a sleep or a wait with a deadline touches the clock, and such steps conflict with each other.
* Fair scheduling: the step that ends in a yield (``sleep(0)``, a failed poll) writes the scheduler's fairness,
  which every step reads: which threads must run before the yielder again depends on which ran before it. A poll
  also reads its object as its thread arrives there, since that decides whether it yields.
* An executor's idle count: submit reads it after its put, a worker writes it after a work item.

Value choices from extensions (faults, crashes) are not steps: the search branches on every value of every such
choice, whatever the order of threads around it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from racecheck.runtime.access import (
    ANYTHING_OBJ,
    BEGIN,
    END,
    ENTRY,
    FAIRNESS_OBJ,
    FAIRNESS_READ,
    JOIN,
    KINDS,
    LIST,
    MEMORY_OBJ,
    READ,
    START,
    YIELDED,
    Access,
    MemObj,
)

__racecheck_engine__ = True

# Kinds that commute with each other on one object: looking (reads, listings), and a directory's entry changes.
_COMMUTING_GROUPS = (frozenset({READ, LIST}), frozenset({ENTRY}))
# kind -> the group of kinds it commutes with on one object (the same frozenset object for every kind of a group);
# a kind missing here commutes with nothing on its object.
COMMUTING: dict[str, frozenset[str]] = {kind: group for group in _COMMUTING_GROUPS for kind in group}
_COMMUTE = COMMUTING


def accesses_conflict(a: Access, b: Access) -> bool:
    """Two accesses by different threads conflict: one object, kinds that do not commute; or one of them is a
    wildcard that covers the other (``wildcard_conflict``)."""
    if a.obj != b.obj:
        return wildcard_conflict(a.obj, b.obj)
    group = _COMMUTE.get(a.kind)
    if group is not None and b.kind in group:
        return False
    return (a.kind, b.kind) not in _UNRELATED


def wildcard_conflict(a: str, b: str) -> bool:
    """Two different objects that conflict all the same: a bare point's ``anything`` with every object, unresolved
    ``memory`` with every piece of memory (``MemObj``)."""
    if a == ANYTHING_OBJ or b == ANYTHING_OBJ:
        return True
    if type(a) is MemObj and type(b) is MemObj:
        return a == MEMORY_OBJ or b == MEMORY_OBJ
    return False


# A join and the first step of the thread it waits for: the join needs the thread's end, which its first step
# comes before anyway, so the two never meet.
_UNRELATED = frozenset({(BEGIN, JOIN), (JOIN, BEGIN)})


def _kinds_conflict(a: str, b: str) -> bool:
    group = _COMMUTE.get(a)
    return (group is None or b not in group) and (a, b) not in _UNRELATED


# (kind, kind) -> whether two accesses of one object with those kinds conflict: ``accesses_conflict`` once the
# object is known to be the same, as a lookup (the search's inner loops ask it most).
KINDS_CONFLICT: dict[tuple[str, str], bool] = {(a, b): _kinds_conflict(a, b) for a in KINDS for b in KINDS}


# Conflicts that only ever go one way: a thread's start comes before its first step, its end before a join on it
# returns. They order steps (happens-before) but never race: the other order cannot happen.
ENABLING = frozenset({(START, BEGIN), (END, JOIN)})


def dependent(left: Iterable[Access], right: Iterable[Access]) -> bool:
    """Two steps (each a tuple of accesses) of different threads conflict when any pair of their accesses does."""
    right = right if isinstance(right, tuple) else tuple(right)
    for a in left:
        for b in right:
            if accesses_conflict(a, b):
                return True
    return False


def conflicts(left: Iterable[Access], right: Iterable[Access]) -> frozenset[str]:
    """The objects on which two steps conflict (empty: they commute), as a report names a race: the scheduler's
    fairness is left out (it orders steps around a yield, it is no object of the program)."""
    right = tuple(right)
    found = set()
    for a in left:
        for b in right:
            if a.obj != FAIRNESS_OBJ and accesses_conflict(a, b):
                # a wildcard names what it met: the other side's object
                wildcard = a.obj == ANYTHING_OBJ or (a.obj == MEMORY_OBJ and b.obj != ANYTHING_OBJ)
                found.add(b.obj if wildcard else a.obj)
    return frozenset(found)


def commuting_run(kind: str) -> frozenset[str] | None:
    """The kinds that commute with ``kind`` on one object (None: it commutes with nothing there). An interleaving's
    identity treats a run of mutually commuting accesses to one object as a set."""
    return _COMMUTE.get(kind)



def steps(events: Sequence[Any]) -> list[tuple[Any, int, tuple[Access, ...]]]:
    """The scheduling steps of a trace, each as (its event, the thread's step number counted from 0, everything the
    step touched). A note (a release, a notify: ``switch == "info"``) adds its accesses to the step its thread is
    running. A step's number within its thread is its identity in every schedule equivalent to this one."""
    out: list[tuple[Any, int, tuple[Access, ...]]] = []
    counts: dict[int, int] = {}
    last: dict[int, int] = {}
    for event in events:
        tid = event.tid
        if event.switch == "info":
            at = last.get(tid)
            if at is not None and event.access:
                step, nth, touched = out[at]
                out[at] = (step, nth, touched + tuple(a for a in event.access if a not in touched))
            continue
        nth = counts.get(tid, 0)
        counts[tid] = nth + 1
        last[tid] = len(out)
        out.append((event, nth, tuple(event.access)))
    return out


def _meets(touched: tuple[Access, ...], tid: int, kept: dict[str, list[tuple[int, str]]],
           wild: list[tuple[int, Access]]) -> bool:
    """Whether a step of ``tid`` conflicts with a kept step of another thread (``causal_past``)."""
    for a in touched:
        for t, kind in kept.get(a.obj, ()):
            if t != tid and accesses_conflict(a, Access(a.obj, kind)):
                return True
        if a.obj == ANYTHING_OBJ or a.obj == MEMORY_OBJ:
            if any(t != tid and accesses_conflict(a, Access(obj, kind))
                   for obj, seen in kept.items() for t, kind in seen):
                return True
        for t, w in wild:
            if t != tid and accesses_conflict(a, w):
                return True
    return False


def shown(obj: str) -> str:
    """How a report names an object: a file or directory by its path, unresolved memory as shared memory, a bare
    point's wildcard as shared state, anything else by its name."""
    if obj == MEMORY_OBJ:
        return "shared memory"
    if obj == ANYTHING_OBJ:
        return "shared state"
    kind, _, rest = obj.partition(" ")
    return rest if kind in ("file", "dir") and rest else obj


def most_specific(objs: Iterable[str]) -> str:
    """Of the objects two steps conflict on, the one a report names: a file before a directory's entries, the
    deepest path first (an ancestor only read on the way), otherwise in name order."""
    return min(objs, key=lambda obj: (obj.startswith("dir "), -len(obj) if obj.startswith("file ") else 0, obj))


def causal_past(events: Sequence[Any], tid: int) -> list[Any]:
    """The events of the steps that happen before thread ``tid``'s last step, that step included (program order
    and conflicts), with their notes: the part of a run that decided what that step did. A run that stops at an
    exception in ``tid`` stops wherever the other threads happened to be; two equivalent runs agree on this part
    only, so that is what a failing run's interleaving is made of."""
    found = steps(events)
    if any(YIELDED[0] in touched for _, _, touched in found):  # every step reads the fairness a yield wrote
        found = [(event, nth, (*touched, FAIRNESS_READ)) for event, nth, touched in found]
    last = max((k for k, (event, _, _) in enumerate(found) if event.tid == tid), default=None)
    if last is None:
        return list(events)
    keep = [False] * len(found)
    threads: set[int] = set()
    kept: dict[str, list[tuple[int, str]]] = {}  # object -> (thread, kind) of the kept steps touching it
    wild: list[tuple[int, Access]] = []  # the kept wildcard accesses (``anything``, unresolved memory)
    for k in range(last, -1, -1):
        event, _, touched = found[k]
        if k != last and event.tid not in threads and not _meets(touched, event.tid, kept, wild):
            continue
        keep[k] = True
        threads.add(event.tid)
        for a in touched:
            kept.setdefault(a.obj, []).append((event.tid, a.kind))
            if a.obj == ANYTHING_OBJ or a.obj == MEMORY_OBJ:
                wild.append((event.tid, a))
    kept_steps = {id(found[k][0]) for k in range(len(found)) if keep[k]}
    out = []
    owner: dict[int, bool] = {}
    for event in events:
        if event.switch == "info":
            if owner.get(event.tid):
                out.append(event)
            continue
        owner[event.tid] = id(event) in kept_steps
        if owner[event.tid]:
            out.append(event)
    return out
