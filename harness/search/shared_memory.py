"""Which memory steps can matter to another thread: learned across an exploration's runs, so that the sampling
strategies spend their switches where a switch can change what happens.

With memory watched, every access to plain memory that another thread could run before is a decision, and in
library code most of them touch objects only one thread ever sees (a pickler's state, a path being parsed) or only
reads (a class attribute). Switching threads before such a step changes nothing: the step commutes with everything
the others do, so the switch is the same as a switch at the thread's next step that does not. PCT draws its change
points over decisions, so its bound 1/(n k^(d-1)) fell with each of them: the Lightning 1.8 writer's WinError 32
needed ~10x more schedules with memory watched than without, on accesses inside torch's and fsspec's writers.

``SharedMemory`` reads every ended run's trace (its steps and notes, and the accesses that joined a running step)
and keeps, per memory object (``ObjKind.MEMORY``, by its run-stable name), which threads touched it with which kinds;
an object is *shared* once two threads touched it with kinds the dependency relation says conflict. A step is
*quiet* when everything it touches is memory that earlier runs saw and never shared. Everything else is not: other
objects (locks, files, queues, threads), memory the engine could not name, a bare point, and memory no run has seen
yet (so the first run counts every decision, and a path taken for the first time is never quiet). Names are by type
and order of first touch, so a schedule that touches objects in another order may name them differently: the
object is then unseen, which is the safe side.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from racecheck.runtime import relation
from racecheck.runtime.steps import Access, ObjKind

__racecheck_engine__ = True

_MEMORY = ObjKind.MEMORY


class SharedMemory:
    """One exploration's knowledge of its memory objects: who touched each, how, and which are shared."""

    def __init__(self) -> None:
        self.touched: dict[Any, dict[Any, int]] = {}  # memory Obj -> Kind -> bit mask of the threads seen with it
        self.shared: set[Any] = set()

    def learn(self, trace: Sequence[Any], seen: Mapping[Any, Iterable[tuple[int, Any]]] | None = None) -> None:
        """Add what one ended run's trace shows. ``seen``: when given, what the run's data-race finder read of the
        same trace (``RunEnd.touched``: per object, the (thread, kind) pairs that touched it), read instead of
        walking every access again: what is learned depends only on which pairs touched each object, not on their
        order (an object is shared once two threads' kinds conflict, whichever came first)."""
        if seen is not None:
            self._learn_seen(seen)
            return
        conflict = relation.active().conflict_rows[_MEMORY]
        touched, shared = self.touched, self.shared
        for event in trace:
            access = event.access
            if not access:
                continue
            for one in access:
                obj = one.obj
                if obj.kind is not _MEMORY or obj in shared:
                    continue
                kinds = touched.get(obj)
                if kinds is None:
                    touched[obj] = {one.kind: 1 << event.tid}
                elif _conflicts(kinds, event.tid, one.kind, conflict):
                    shared.add(obj)
                    del touched[obj]  # a shared object is never asked about again

    def _learn_seen(self, seen: Mapping[Any, Iterable[tuple[int, Any]]]) -> None:
        conflict = relation.active().conflict_rows[_MEMORY]
        touched, shared = self.touched, self.shared
        for obj, pairs in seen.items():
            if obj.kind is not _MEMORY or obj in shared:
                continue
            kinds = touched.get(obj)
            if kinds is None:
                kinds = touched[obj] = {}
            for tid, kind in pairs:
                if _conflicts(kinds, tid, kind, conflict):
                    shared.add(obj)
                    del touched[obj]
                    break

    def quiet(self, access: tuple[Access, ...]) -> bool:
        """Whether a step touching ``access`` commutes with every other thread's step, as far as the runs so far
        show: memory only, every object of it seen and none shared."""
        if not access:
            return False
        touched = self.touched
        for one in access:
            obj = one.obj
            if obj.kind is not _MEMORY or obj not in touched:
                return False
        return True


def _conflicts(kinds: dict[Any, int], tid: int, kind: Any, conflict: Mapping[Any, bool]) -> bool:
    """Note that thread ``tid`` touched an object with ``kind`` (``kinds``: per kind, the mask of the threads seen
    with it); whether that makes the object shared: another thread touched it with a kind that conflicts. What both
    ways of learning (from a trace, from the finder's pairs) decide an object by."""
    bit = 1 << tid
    mask = kinds.get(kind, 0)
    if mask & bit:
        return False
    kinds[kind] = mask | bit
    for other, threads in kinds.items():
        if threads & ~bit and conflict[(kind, other)]:
            return True
    return False
