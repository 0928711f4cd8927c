"""Steps and their dependence: which two steps of different threads commute, which conflict, and a run's causal
past, over the one relation of ``racecheck.runtime.relation`` (which owns the table of kinds and objects).

Two steps conflict when they touch one object and their kinds do not commute on it; two steps commute when every
pair of their accesses does. Only the typed accesses the primitives and the fake filesystem record are read
(``racecheck.runtime.steps``), never display text. Why each pair is what it is (the relation's rows say it too):

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

from racecheck.runtime.access import FAIRNESS_OBJ, FAIRNESS_READ, YIELDED
from racecheck.runtime.relation import Relation, active, most_specific, shown
from racecheck.runtime.sinks import build
from racecheck.runtime.steps import Access, Obj, Step

__racecheck_engine__ = True

__all__ = ["causal_past", "conflicts", "dependent", "most_specific", "shown", "steps"]


def dependent(left: Iterable[Access], right: Iterable[Access], relation: Relation | None = None) -> bool:
    """Two steps (each a tuple of accesses) of different threads conflict when any pair of their accesses does."""
    conflict = (relation or active()).conflict
    right = right if isinstance(right, tuple) else tuple(right)
    for a in left:
        for b in right:
            if conflict(a, b):
                return True
    return False


def conflicts(left: Iterable[Access], right: Iterable[Access], relation: Relation | None = None) -> frozenset[Obj]:
    """The objects on which two steps conflict (empty: they commute), as a report names a race: the scheduler's
    fairness is left out (it orders steps around a yield, it is no object of the program)."""
    relation = relation or active()
    right = tuple(right)
    found = set()
    for a in left:
        for b in right:
            if a.obj is not FAIRNESS_OBJ and relation.conflict(a, b):
                # a wildcard names what it met: the other side's object
                found.add(b.obj if a.obj is not b.obj and relation.covers(a.obj, b.obj) else a.obj)
    return frozenset(found)


def steps(events: Sequence[Any]) -> list[Step]:
    """The scheduling steps of a sequence of events (``racecheck.runtime.sinks.build``), for traces that are not a
    run's own step log: a deadlocked run's with its waiting pseudo-events, a swapped run's read against it. A note
    (a release, a notify: ``switch == "info"``) adds its accesses to the step its thread is running, and one made
    by a thread that runs no step (unwinding after the run stopped) to that thread's last step: the racing pair
    and a failing run's causal past see the lock it gave back. A step's number within its thread is its identity
    in every schedule equivalent to this one."""
    return build(events, strays=True)


def _meets(touched: tuple[Access, ...], tid: int, kept: dict[Obj, list[tuple[int, Access]]],
           wild: list[tuple[int, Access]], relation: Relation) -> bool:
    """Whether a step of ``tid`` conflicts with a kept step of another thread (``causal_past``)."""
    conflict = relation.conflict
    for a in touched:
        for t, other in kept.get(a.obj, ()):
            if t != tid and conflict(a, other):
                return True
        if relation.is_wildcard(a.obj):
            if any(t != tid and conflict(a, other) for seen in kept.values() for t, other in seen):
                return True
        for t, w in wild:
            if t != tid and conflict(a, w):
                return True
    return False


def causal_past(events: Sequence[Any], tid: int, relation: Relation | None = None) -> list[Any]:
    """The events of the steps that happen before thread ``tid``'s last step, that step included (program order
    and conflicts), with their notes: the part of a run that decided what that step did. A run that stops at an
    exception in ``tid`` stops wherever the other threads happened to be; two equivalent runs agree on this part
    only, so that is what a failing run's interleaving is made of."""
    relation = relation or active()
    found = steps(events)
    if any(YIELDED[0] in step.accesses for step in found):  # every step reads the fairness a yield wrote
        found = [Step(step.event, step.nth, (*step.accesses, FAIRNESS_READ)) for step in found]
    last = max((k for k, step in enumerate(found) if step.event.tid == tid), default=None)
    if last is None:
        return list(events)
    keep = [False] * len(found)
    threads: set[int] = set()
    kept: dict[Obj, list[tuple[int, Access]]] = {}  # object -> (thread, access) of the kept steps touching it
    wild: list[tuple[int, Access]] = []  # the kept wildcard accesses (``anything``, unresolved memory)
    for k in range(last, -1, -1):
        step = found[k]
        step_tid = step.event.tid
        if k != last and step_tid not in threads and not _meets(step.accesses, step_tid, kept, wild, relation):
            continue
        keep[k] = True
        threads.add(step_tid)
        for a in step.accesses:
            kept.setdefault(a.obj, []).append((step_tid, Access(a.obj, a.kind)))
            if relation.is_wildcard(a.obj):
                wild.append((step_tid, a))
    kept_steps = {id(found[k].event) for k in range(len(found)) if keep[k]}
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
