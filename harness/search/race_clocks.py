"""The data-race finder, online as FastTrack is: vector clocks advanced as the run's events become final, each pair
found when its later access arrives (``racecheck.search.data_races`` says what is checked, what orders and why).

The data-race sink (``racecheck.search.data_race_sink``) feeds it the run's events as they become final
(``Sink.events``: at the run's decisions, every event so far is, ``racecheck.runtime.sinks.StepLog``). It reads
events, not ``Step`` values: a step merges its notes and joined accesses, while the finder orders them by the point
each was made at and names each by its own event.

A step's operations are played when the next slice of the trace begins, not when it arrives: a step's takes and
gives of real locks made before the run (``RunView.real_sync``) are those its thread made before its next point,
which are only all recorded by then. (One order it cannot know: a real lock's operation made by a thread
unwinding after the run was stopped, once that thread's last step has been played. The whole-trace pass put it in
that step; after the stop only notes of unwinding threads follow, so here it is left out.) What a report reads only
at the end (source lines, which a run that left a thread stuck blanks; which accesses were atomic additions) is kept
by reference and read from the ``RunEnd``.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import itemgetter
from typing import Any, NamedTuple

from racecheck.runtime.access import BEGIN, thread_obj
from racecheck.runtime.relation import Role, active
from racecheck.runtime.steps import Obj, ObjKind

__racecheck_engine__ = True

_REAL = object()  # the object kind of a real lock's take or give among a step's operations
_REAL_ROLE = -1  # its category: neither data nor synchronisation the relation knows of (``_real``)


class _RealObj:
    kind = _REAL


class _RealLock(NamedTuple):
    """A real lock's take (+1) or give (-1), put among a step's accesses in their shape: its object's kind says what
    it is where the finder looks an access's role up anyway (a test of every operation for it cost ~4% of it)."""

    obj: Any
    change: int
    lock: int


_REAL_OBJ = _RealObj()
_INF = float("inf")
DATA, SYNC = Role.DATA, Role.SYNC

# One race as found in one run: (object, (thread, kind, location, event index, point) for each side).
# (thread, kind, location, event index, point, the callee it was handed to or "") for each side
Side = tuple[int, str, str, int, int, str]
Found = tuple[Obj, Side, Side]


class RaceClocks:
    """One run's vector clocks and shadow memory, fed the run's trace as it becomes final (``feed``), closed at the
    run's end (``close``). An operation is (point, class, position, access, where, index, point, thread), ``where``
    None for a line read from the trace event at ``index``, else the (thread, point) of a joined access's line (the
    position 0 for a step's own accesses: only sorting read it, and the order they are put in is theirs)."""

    def __init__(self, atomic: bool = False) -> None:
        self.atomic = atomic  # a pair of atomic additions is a race too (``Config.atomic_races``)
        self.n = 0
        self.clocks: list[list[int]] = []
        self.sync: dict[Any, list[int]] = {}
        self.active: set[int] = set()  # threads that have begun
        self.shadow: dict[Obj, dict[tuple[int, str], tuple[int, int, int, Any, str]]] = {}
        self.found: list[tuple[Obj, tuple, tuple]] = []  # sides with ``where`` in place of the line
        self.pairs: set[tuple] = set()
        self.relation = active()
        # object kind -> (its role, its conflict table): built once per relation, not per object and run
        self.categories = _categories(self.relation)
        self.cursor = 0  # the trace's events read so far
        self.slice: list[tuple] = []  # the operations of the slice being read, played when the next one begins
        self.mixed = False  # it holds operations made at points of their own (merged accesses, real locks)
        self.running = -1
        self.stepping = -1  # the index of the step event that began it (-1: a slice of notes)
        self.view: Any = None  # the run's view: its real-lock operations so far (``begin``)
        self.real_source: Sequence[tuple[int, int, int, int]] = ()  # the run's real-lock operations, as they grow
        self.real_read = 0
        self.real: dict[int, list[tuple[int, int, int]]] = {}  # thread -> its real-lock operations, in order
        self.taken: dict[int, int] = {}  # thread -> how many of them a step has played

    def feed(self, trace: Sequence[Any]) -> None:
        """Every event of ``trace`` is final: read those not read yet (per decision of every run: the slice's state
        is kept in locals while it goes). Each slice that ends here is put in its order where it lies in ``ops``
        (its thread's real-lock operations added, sorted when mixed), and all of them are played in one pass: a
        call per slice, as it was, cost as much as a slice's own play on the micro workload."""
        start, stop = self.cursor, len(trace)
        if start >= stop:
            return
        real = self._real_now()  # no real lock is taken or given while the events are read: the same all through
        n, ops, running, stepping, mixed = self.n, self.slice, self.running, self.stepping, self.mixed
        begun = 0  # where the slice being read begins in ``ops``
        for index in range(start, stop):
            event = trace[index]
            tid = event.tid
            if tid >= n:
                self._grow(tid)
                n = self.n
            if event.switch != "info":
                if stepping >= 0 and real and self._real_ops(ops, running, stepping, trace):
                    mixed = True
                if mixed:
                    ops[begun:] = sorted(ops[begun:], key=_order)
                begun = len(ops)
                running, stepping = tid, index
                access, marks, at = event.access, event.marks, event.at
                if marks:
                    mixed = True
                    own = len(access) - len(marks)
                    for position, one in enumerate(access):
                        if position < own:
                            ops.append((at, 0, position, one, None, index, at, tid))
                        else:
                            mark = marks[position - own]
                            ops.append((mark, 1, position, one, (tid, mark), index, mark, tid))
                else:
                    mixed = False
                    for one in access:  # in order: no position
                        ops.append((at, 0, 0, one, None, index, at, tid))
            else:
                access = event.access
                if access:
                    if tid != running:
                        if stepping >= 0 and real and self._real_ops(ops, running, stepping, trace):
                            mixed = True
                        if mixed:
                            ops[begun:] = sorted(ops[begun:], key=_order)
                        begun = len(ops)
                        running, stepping, mixed = tid, -1, False
                    at = event.at
                    for position, one in enumerate(access):
                        ops.append((at, 2, index * 64 + position, one, None, index, at, tid))
        pending = ops[begun:]
        if begun:
            del ops[begun:]
            self._play(ops)
        self.cursor, self.slice, self.running, self.stepping, self.mixed = stop, pending, running, stepping, mixed

    def close(self, run_end: Any) -> list[Found]:
        """The run has ended (a ``RunEnd``): its last events are read and played, and its races are named, each
        pair once, in trace order of the later access (a pair of atomic additions only with ``atomic``)."""
        trace = run_end.trace
        memory = run_end.memory_steps
        self.real_source = memory.real_sync or ()
        self.feed(trace)
        ops, mixed, stepping = self.slice, self.mixed, self.stepping
        if stepping >= 0 and self._real_now() and self._real_ops(ops, self.running, stepping, trace):
            mixed = True
        if mixed:
            ops.sort(key=_order)
        self._play(ops)
        self.slice = []
        atomic: set[tuple[int, int]] = set() if self.atomic else memory.atomic
        where = memory.where or {}
        out: list[Found] = []
        for obj, first, second in self.found:
            if atomic and (first[0], first[4]) in atomic and (second[0], second[4]) in atomic:
                continue  # two atomic additions: neither is lost, only their order is open (the program sees it)
            out.append((obj, _side(first, trace, where), _side(second, trace, where)))
        return out

    def _grow(self, tid: int) -> None:
        """Thread ``tid`` is the first of its number: every clock gains room for it (a synchronisation object's
        shorter clock reads as zeros where it has none)."""
        n = tid + 1
        for clock in self.clocks:
            clock.extend([0] * (n - self.n))
        for new in range(self.n, n):
            clock = [0] * n
            clock[new] = 1
            self.clocks.append(clock)
        self.n = n

    def _real_ops(self, ops: list[tuple], tid: int, stepping: int, trace: Sequence[Any]) -> bool:
        """Adds to ``ops`` the real-lock operations of thread ``tid``'s step at ``stepping``: those it made before
        its next point. Whether there was one."""
        source = self.real_source
        if self.real_read < len(source):
            for thread, point, change, lock in source[self.real_read:]:
                self.real.setdefault(thread, []).append((point, change, lock))
            self.real_read = len(source)
        mine = self.real.get(tid)
        if not mine:
            return False
        k = self.taken.get(tid, 0)
        if k >= len(mine):
            return False
        limit = _INF
        for index in range(stepping + 1, len(trace)):  # every one of them final
            event = trace[index]
            if event.tid == tid and event.switch != "info":
                limit = event.at
                break
        start = k
        while k < len(mine) and mine[k][0] < limit:
            point, change, lock = mine[k]
            ops.append((point, 3, k, _RealLock(_REAL_OBJ, change, lock), None, stepping, point, tid))
            k += 1
        self.taken[tid] = k
        return k > start

    def _real_now(self) -> Sequence[tuple[int, int, int, int]]:
        """The run's real-lock operations so far (read from its view until there are some)."""
        if not self.real_source and self.view is not None:
            self.real_source = self.view.real_sync or ()
        return self.real_source

    def _play(self, ops: list[tuple]) -> None:
        """Operations in the order their threads made them, slice after slice (``feed``): each slice a step's own
        accesses, then notes, merged accesses and real-lock operations by the point they were made at."""
        categories, clocks, shadow, sync, active = self.categories, self.clocks, self.shadow, self.sync, self.active
        take_only = self.relation.take_only  # what only takes a synchronising object's clock (``publishes``)
        for op in ops:
            one = op[3]
            obj = one.obj
            category, conflict = categories[obj.kind]
            if category == DATA:  # inline: the most frequent case by far
                kind, tid = one.kind, op[7]
                clock = clocks[tid]
                last = shadow.get(obj)
                if last is None:
                    shadow[obj] = {(tid, kind): (clock[tid], op)}
                    continue
                for (other, other_kind), (epoch, earlier) in last.items():
                    if other != tid and epoch > clock[other] and conflict[(other_kind, kind)]:
                        self._found(obj, (other, other_kind, earlier[4], earlier[5], earlier[6], earlier[3].via),
                                    (tid, kind, op[4], op[5], op[6], one.via))
                last[(tid, kind)] = (clock[tid], op)
            elif category == SYNC:  # inline too: a run of executors and futures is mostly these
                kind, tid = one.kind, op[7]
                active.add(tid)
                clock = clocks[tid]
                held = sync.get(obj)
                if kind == BEGIN and held is None and obj is thread_obj(tid):
                    # a thread nobody started: the test function, or a crash's recovery check, after all so far
                    for other in active:
                        _join(clock, clocks[other])
                    continue
                if held is not None:
                    for k, value in enumerate(held):
                        if value > clock[k]:
                            clock[k] = value
                if kind not in take_only:
                    sync[obj] = clock.copy()
                    clock[tid] += 1
            elif category == _REAL_ROLE:
                self._real(op)

    def _found(self, obj: Obj, first: tuple, second: tuple) -> None:
        pair = (obj, first[0], first[1], first[4], second[0], second[1], second[4])
        if pair not in self.pairs:  # whether both are atomic additions is known by the pair: told at ``close``
            self.pairs.add(pair)
            self.found.append((obj, first, second))

    def _real(self, op: tuple) -> None:
        _, change, lock = op[3]
        tid = op[7]
        clock = self.clocks[tid]
        held = self.sync.get(lock)
        if held is not None:
            _join(clock, held)
        if change < 0:
            self.sync[lock] = clock.copy()
            clock[tid] += 1


_CATEGORIES: list[tuple[Any, dict[Any, tuple[Any, Any]]]] = []


def _categories(relation: Any) -> dict[Any, tuple[Any, Any]]:
    """``relation``'s role and conflict table of every object kind (a role is its object kind's: ``Relation.role``)."""
    if not _CATEGORIES or _CATEGORIES[0][0] is not relation:
        found: dict[Any, tuple[Any, Any]] = {
            kind: (relation.roles[kind], relation.conflict_rows[kind]) for kind in ObjKind}
        found[_REAL] = (_REAL_ROLE, None)
        _CATEGORIES[:] = [(relation, found)]
    return _CATEGORIES[0][1]


def _side(side: tuple, trace: Sequence[Any], where: dict[tuple[int, int], str]) -> Side:
    tid, kind, at, index, point, via = side
    return (tid, kind, trace[index].loc if at is None else where.get(at, ""), index, point, via)


# An operation's place in its slice: its point and class; within one of those, the order it was put in (a stable
# sort), which is its position (a slice has one step's own accesses, and notes and real-lock operations in order).
_order = itemgetter(0, 1)


def _join(into: list[int], other: list[int]) -> None:
    for k, value in enumerate(other):
        if value > into[k]:
            into[k] = value
