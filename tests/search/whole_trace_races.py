"""The data-race finder as it was before it went online: one pass of vector clocks over an ended run's whole trace
(``find``). Kept as the reference the online finder (``racecheck.search.race_clocks``, fed step by step through the
data-race sink) is compared with on generated programs (``test_online_races.py``): written independently of it, it
reads each step's real-lock operations by looking ahead in the trace, and source lines and atomic additions as it
goes."""

from __future__ import annotations

from typing import Any

from racecheck.runtime.access import BEGIN, thread_obj
from racecheck.runtime.relation import Role, active
from racecheck.runtime.sinks import Sink
from racecheck.runtime.steps import Obj
from racecheck.search.data_race_sink import DataRaceSink
from racecheck.search.race_clocks import Found, Side

__racecheck_engine__ = True

_REAL = object()  # marks a real lock's take or give among a step's operations


def find(run: Any, atomic: bool = False) -> list[Found]:
    """Every data race of an ended run (a ``RunEnd``: its trace, and its memory records' ``where``, ``real_sync``
    and ``atomic``): each pair once, in trace order of the later access; a pair of atomic additions
    (``MemorySteps.atomic``) only with ``atomic``."""
    trace = run.trace
    if not trace:
        return []
    return _Finder(run, atomic).scan(trace)


class _Finder:
    """The vector-clock pass over one trace."""

    def __init__(self, run: Any, atomic: bool = False) -> None:
        trace = run.trace
        # (thread, point) of the run's atomic additions, when a pair of them is no race (the default)
        self.atomic: set[tuple[int, int]] = set() if atomic else run.memory_steps.atomic
        self.where: dict[tuple[int, int], str] = run.memory_steps.where or {}
        real_sync = run.memory_steps.real_sync or ()
        self.n = 1 + max(max(e.tid for e in trace), max((op[0] for op in real_sync), default=0))
        self.clocks: list[list[int]] = [[0] * self.n for _ in range(self.n)]
        for tid in range(self.n):
            self.clocks[tid][tid] = 1
        self.sync: dict[Any, list[int]] = {}
        self.active: set[int] = set()  # threads that have begun
        self.started: set[str] = set()
        self.shadow: dict[Obj, dict[tuple[int, str], tuple[int, int, int, str]]] = {}
        self.found: list[Found] = []
        self.pairs: set[tuple] = set()
        self.relation = active()
        # object -> (its role, its kind's conflict table): looked up once per object and run
        self.categories: dict[Any, tuple[Role, dict]] = {}
        self.real: dict[int, list[tuple[int, int, int]]] = {}  # thread -> its real-lock operations, in order
        for tid, point, change, lock in real_sync:
            self.real.setdefault(tid, []).append((point, change, lock))

    def scan(self, trace: list[Any]) -> list[Found]:
        next_at = self._next_points(trace) if self.real else {}
        taken = dict.fromkeys(self.real, 0)
        slice_ops: list[tuple] = []
        running = -1
        mixed = False  # the slice holds operations made at points of their own (merged accesses, real locks)
        for index, event in enumerate(trace):
            tid, switch, access, at, marks = event.tid, event.switch, event.access, event.at, event.marks
            if switch != "info":
                self._play(slice_ops, mixed)
                slice_ops = []
                running = tid
                mixed = bool(marks)
                own = len(access) - len(marks)
                loc = event.loc
                for position, one in enumerate(access):
                    if position < own:
                        slice_ops.append((at, 0, position, one, loc, index, at, tid))
                    else:
                        mark = marks[position - own]
                        slice_ops.append((mark, 1, position, one, self.where.get((tid, mark), ""), index, mark, tid))
                ops = self.real.get(tid)
                if ops:
                    limit = next_at[index]
                    k = taken[tid]
                    while k < len(ops) and ops[k][0] < limit:
                        point, change, lock = ops[k]
                        slice_ops.append((point, 3, k, (_REAL, change, lock), "", index, point, tid))
                        mixed = True
                        k += 1
                    taken[tid] = k
            elif access:
                if tid != running:
                    self._play(slice_ops, mixed)
                    slice_ops = []
                    running = tid
                    mixed = False
                for position, one in enumerate(access):
                    slice_ops.append((at, 2, index * 64 + position, one, event.loc, index, at, tid))
        self._play(slice_ops, mixed)
        return self.found

    @staticmethod
    def _next_points(trace: list[Any]) -> dict[int, float]:
        """For each step event, the point of its thread's next step (infinity: none): the real-lock operations made
        before it belong to this step."""
        out: dict[int, float] = {}
        following: dict[int, float] = {}
        for index in range(len(trace) - 1, -1, -1):
            event = trace[index]
            if event.switch != "info":
                out[index] = following.get(event.tid, float("inf"))
                following[event.tid] = event.at
        return out

    def _play(self, ops: list[tuple], mixed: bool) -> None:
        """One slice's operations in the order its thread made them: a step's own accesses, then notes, merged
        accesses and real-lock operations by the point they were made at (only those need sorting)."""
        if not ops:
            return
        if mixed:
            ops.sort(key=_order)
        categories, clocks, shadow = self.categories, self.clocks, self.shadow
        for op in ops:
            one = op[3]
            if one[0] is _REAL:
                self._real(op)
                continue
            obj = one.obj
            found = categories.get(obj)
            if found is None:
                found = categories[obj] = (self.relation.role(obj), self.relation.conflict_rows[obj.kind])
            category, conflict = found
            if category == Role.DATA:  # inline: the most frequent case by far
                kind, tid = one.kind, op[7]
                clock = clocks[tid]
                entry = (clock[tid], op[5], op[6], op[4], one.via)
                last = shadow.get(obj)
                if last is None:
                    shadow[obj] = {(tid, kind): entry}
                    continue
                for (other, other_kind), (epoch, index, point, loc, via) in last.items():
                    if other != tid and epoch > clock[other] and conflict[(other_kind, kind)]:
                        self._found(obj, (other, other_kind, loc, index, point, via),
                                    (tid, kind, op[4], op[5], op[6], one.via))
                last[(tid, kind)] = entry
            elif category == Role.SYNC:
                self._sync(op, obj, one.kind)

    def _found(self, obj: Obj, first: Side, second: Side) -> None:
        atomic = self.atomic
        if atomic and (first[0], first[4]) in atomic and (second[0], second[4]) in atomic:
            return  # two atomic additions: neither is lost, only their order is open (the program's checks see it)
        pair = (obj, first[0], first[1], first[4], second[0], second[1], second[4])
        if pair not in self.pairs:
            self.pairs.add(pair)
            self.found.append((obj, first, second))

    def _sync(self, op: tuple, obj: Obj, kind: str) -> None:
        tid = self._owner(op)
        self.active.add(tid)
        clock = self.clocks[tid]
        held = self.sync.get(obj)
        if kind == BEGIN and held is None and obj is thread_obj(tid):
            # a thread nobody started: the test function, or a crash's recovery check, after everything so far
            for other in self.active:
                _join(clock, self.clocks[other])
            self.active.add(tid)
            return
        if held is not None:
            _join(clock, held)
        if self.relation.publishes(kind):
            self.sync[obj] = clock.copy()
            clock[tid] += 1

    def _real(self, op: tuple) -> None:
        _, change, lock = op[3]
        tid = self._owner(op)
        clock = self.clocks[tid]
        held = self.sync.get(lock)
        if held is not None:
            _join(clock, held)
        if change < 0:
            self.sync[lock] = clock.copy()
            clock[tid] += 1

    @staticmethod
    def _owner(op: tuple) -> int:
        return op[7]


def _order(op: tuple) -> tuple:
    return (op[0], op[1], op[2])


def _join(into: list[int], other: list[int]) -> None:
    for k, value in enumerate(other):
        if value > into[k]:
            into[k] = value


class Ends(Sink):
    """Keeps every ``RunEnd`` it is told of, for the whole-trace pass to read after the run."""

    def __init__(self) -> None:
        self.ends: list[Any] = []

    def end(self, run_end: Any) -> None:
        self.ends.append(run_end)


class Watched(DataRaceSink):
    """The data-race sink, noting at the run's end, before it closes, how far it had read and how many pairs it had
    found while the run went."""

    def __init__(self) -> None:
        super().__init__()
        self.before_end: tuple[int, int] = (0, 0)

    def end(self, run_end: Any) -> None:
        self.before_end = (self.clocks.cursor, len(self.clocks.found))
        super().end(run_end)
