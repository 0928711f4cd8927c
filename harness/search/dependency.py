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
* A thread: its ``start`` conflicts with its first step, its last step with a ``join`` on it.
* Plain shared memory: a bare ``racecheck.point()`` and a thread's first step may touch any shared object, so they
  conflict with each other (sound by default); ``racecheck.point(name, on=obj)`` says what a point touches instead.
* Virtual time: waits on the clock conflict with each other (who wakes first depends on the order of deadlines).

Value choices from extensions (faults, crashes) are not steps: the search branches on every value of every such
choice, whatever the order of threads around it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from racecheck.runtime.access import ENTRY, LIST, MEMORY_OBJ, READ, Access

__racecheck_engine__ = True

# Kinds that commute with each other on one object: looking (reads, listings), and a directory's entry changes.
_COMMUTING_GROUPS = (frozenset({READ, LIST}), frozenset({ENTRY}))
# kind -> the group of kinds it commutes with on one object (the same frozenset object for every kind of a group);
# a kind missing here commutes with nothing on its object.
COMMUTING: dict[str, frozenset[str]] = {kind: group for group in _COMMUTING_GROUPS for kind in group}
_COMMUTE = COMMUTING


def accesses_conflict(a: Access, b: Access) -> bool:
    """Two accesses by different threads conflict: one object, kinds that do not commute."""
    if a.obj != b.obj:
        return False
    group = _COMMUTE.get(a.kind)
    return group is None or b.kind not in group


def dependent(left: Iterable[Access], right: Iterable[Access]) -> bool:
    """Two steps (each a tuple of accesses) of different threads conflict when any pair of their accesses does."""
    right = tuple(right)
    if not right:
        return False
    return any(accesses_conflict(a, b) for a in left for b in right)


def conflicts(left: Iterable[Access], right: Iterable[Access]) -> frozenset[str]:
    """The objects on which two steps conflict (empty: they commute)."""
    right = tuple(right)
    return frozenset(a.obj for a in left for b in right if accesses_conflict(a, b))


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


def shown(obj: str) -> str:
    """How a report names an object: a file or directory by its path, plain memory as shared memory, anything
    else by its name."""
    if obj == MEMORY_OBJ:
        return "shared memory"
    kind, _, rest = obj.partition(" ")
    return rest if kind in ("file", "dir") and rest else obj


def most_specific(objs: Iterable[str]) -> str:
    """Of the objects two steps conflict on, the one a report names: a file before a directory's entries, the
    deepest path first (an ancestor only read on the way), otherwise in name order."""
    return min(objs, key=lambda obj: (obj.startswith("dir "), -len(obj) if obj.startswith("file ") else 0, obj))
