"""Lock-aware reduction for dpor: critical sections on one of the program's locks whose contents commute are
explored in one order (after Kokologiannakis, Raad, Vafeiadis, "Effective lock handling in stateless model
checking", OOPSLA 2019, in the setting of source-set DPOR).

With every step's memory watched, a lock stands for nothing the engine does not see: what its critical sections
share is in their own accesses. So two blocking acquires and releases of one lock need not be ordered by
themselves; critical sections are ordered (and their orders reversed) through what they touch. A lock's order
still matters wherever something can tell it, and there its accesses stay as they were (conflicting with every
access to the lock):

* a try-acquire or an acquire with a timeout (it gives up while the lock is held: an outcome of its own);
* a release by a thread that does not hold it, and an acquire of a ``Lock`` its thread holds already (a lock used
  as a signal: the acquire waits for the other thread's release);
* an acquire made while its thread holds another of the program's locks, and its hold (two threads taking two
  locks in opposite orders deadlock only where the inner acquires are ordered against the other's outer ones);
* an acquire made by code whose memory is not watched (``racecheck.runtime.watched_code``): there the lock stands
  for what it protects;
* ``locked()`` (a read of the lock, which conflicts with every acquire and release).

And a step that may block while its thread holds the lock (a wait, a get, a join, an acquire of another lock, a
sleep: anything but plain memory, files and a release) also *writes* each lock its thread holds: what a thread
does while it blocks holding a lock is what a deadlock is made of, so that point is ordered against every acquire
of the lock, as before.

Sleep sets keep the full relation (``racecheck.search.dpor`` wakes a sleeper at any conflicting access of the
original steps): a sleeper woken too often only costs schedules. What the search loses by not ordering two
acquires is where a reversal must start: a thread whose way to its racing step takes a lock that another thread
holds at the race's first step cannot go first there; ``held_on_the_way`` names the acquires before which it can.

Only the analysis sees the rewritten accesses (``LockAware.step``): tokens, traces, the racing pair and
``result.interleavings`` read the steps as they were, so ``interleavings`` still counts the orders of critical
sections, and a lock-aware dpor that explored one order of two commuting ones counts one.
"""

from __future__ import annotations

from collections.abc import Callable

from racecheck.runtime.access import ACQUIRE, RELEASE, WRITE
from racecheck.runtime.steps import Access, Kind, Obj, ObjKind

__racecheck_engine__ = True

Accesses = tuple[Access, ...]

LAX = Kind.ENTRY  # what a lax acquire or release becomes: two commute, any other access to the lock conflicts
# Objects a step can touch without blocking, whatever the kind: plain memory, files, a point's own name.
_DATA = frozenset({ObjKind.MEMORY, ObjKind.ANY_MEMORY, ObjKind.FILE, ObjKind.DIR, ObjKind.FS_STATE, ObjKind.POINT})
_NEVER_BLOCK = frozenset({RELEASE, Kind.NOTIFY, Kind.START, Kind.END})


def is_users_lock(obj: Obj) -> bool:
    """A ``Lock`` or ``RLock`` of the program's (a condition's own lock is the condition, a stand-in's is the
    engine's: both keep their accesses)."""
    return obj.kind is ObjKind.LOCK and not obj.engine


def _reentrant(obj: Obj) -> bool:
    return obj.text.startswith("RLock")


class LockAware:
    """The rewriting of one execution's steps, step by step and rewound with the analysis: who holds each of the
    program's locks (as the trace shows it) and an undo log of its changes."""

    def __init__(self) -> None:
        self.held: dict[Obj, tuple[int, int, bool]] = {}  # lock -> (holder, depth, whether the hold is lax)
        self.log: list[tuple[int, Obj, tuple[int, int, bool] | None]] = []  # (step, lock, what it was before)
        self.locks: dict[Obj, None] = {}  # the program's locks met so far, in the order met (never forgotten)

    def rewind(self, n: int) -> None:
        """Forget what steps ``n`` and later did to the locks."""
        log, held = self.log, self.held
        while log and log[-1][0] >= n:
            _, lock, old = log.pop()
            if old is None:
                held.pop(lock, None)
            else:
                held[lock] = old

    def _set(self, k: int, lock: Obj, new: tuple[int, int, bool] | None) -> None:
        self.log.append((k, lock, self.held.get(lock)))
        if new is None:
            self.held.pop(lock, None)
        else:
            self.held[lock] = new

    def step(self, k: int, tid: int, accesses: Accesses) -> Accesses:
        """Step ``k``'s accesses as the analysis reads them (see the module docstring)."""
        held = self.held
        out: list[Access] | None = None
        for index, access in enumerate(accesses):
            obj, kind = access.obj, access.kind
            new = access
            if obj.kind is ObjKind.LOCK and not obj.engine and (kind is ACQUIRE or kind is RELEASE):
                if obj not in self.locks:
                    self.locks[obj] = None
                holder = held.get(obj)
                if kind is ACQUIRE:
                    if holder is None or holder[0] != tid:  # a new hold: lax if watched code took it blocking,
                        # holding no other lock (a nested acquire is what a lock-order deadlock is made of)
                        lax = access.watched and holder is None and not any(
                            other[0] == tid for other in held.values())
                        self._set(k, obj, (tid, 1, lax))
                    else:  # re-entered (an RLock), or a Lock its holder takes again (a signal): strict
                        lax = holder[2] and _reentrant(obj) and access.watched
                        self._set(k, obj, (tid, holder[1] + 1, holder[2]))
                else:
                    own = holder is not None and holder[0] == tid
                    lax = own and holder[2]
                    self._set(k, obj, None if not own or holder[1] == 1 else (tid, holder[1] - 1, holder[2]))
                if lax:
                    new = Access(obj, LAX)
            marks = ()
            if held and obj.kind not in _DATA and kind not in _NEVER_BLOCK:
                marks = tuple(Access(lock, WRITE) for lock, (holder, _, _) in held.items()
                              if holder == tid and lock is not obj)
            if new is not access or marks:
                if out is None:
                    out = list(accesses[:index])
                out.append(new)
                out.extend(marks)
            elif out is not None:
                out.append(access)
        return accesses if out is None else tuple(out)


def held_on_the_way(i: int, j: int, tids: list[int], before: list[int],
                    holds_of: Callable[[Obj], list[tuple[int, int, int]]], blocking: Callable[[int], Obj | None],
                    locks: list[Obj]) -> tuple[list[int], bool]:
    """For a race (i, j), the acquiring steps of the holds that cover i (held by one thread at the decision before
    i) of a lock that another thread takes on the way to j (a hold of it starting after i, at j or at a step that
    does not happen after i): that thread cannot go first at i, only before the hold's acquire. And whether the
    reversal can start there only: j's own thread takes, by a blocking acquire on its way to j, a lock that i's
    thread held across i from a blocking acquire on (the held-lock rule of ``racecheck.search.dpor``, for a lock
    taken before j rather than at it). ``holds_of`` is ``Analysis.lock_holds``, cached; ``blocking`` is
    ``Analysis.blocking_acquire``."""
    found: list[int] = []
    only = False
    tid_i, tid_j = tids[i], tids[j]
    for lock in locks:
        holds = holds_of(lock)
        covering = [(start, holder) for start, end, holder in holds if start < i <= end]
        if not covering:
            continue
        for start2, _end, taker in holds:
            if i < start2 <= j and (start2 == j or not (before[start2] >> i) & 1):
                for start, holder in covering:
                    if holder != taker and start not in found:
                        found.append(start)
                    if (holder == tid_i and taker == tid_j and blocking(start) == lock
                            and blocking(start2) == lock):
                        only = True
    return found, only


