"""Sampled memory watching: the sampling strategies' schedules run the code that showed no shared memory as written.

Watching every access costs a Python call per attribute read, and in library code most of them touch objects only
one thread ever sees (torch's pickler and zip writer on the executor's worker, fsspec's path parsing on the caller):
the stock micro workload makes ~2,000 such calls a schedule, the few that matter are on the handful of objects both
threads touch. A *learning* run watches everything and lists which code made each access (``Run.learning``); an
object two threads touched, one of them writing, once a second thread existed (an unresolved access counts as
touching every object), is shared, and the code that touched it is *hot*. That is wider than the run's data races,
which depend on its schedule: two fsspec calls a non-preemptive run orders through the executor's queue race in
another schedule; only the set-up before any other thread starts is ordered in every schedule. In a *sampled* run
every function whose code made accesses in a learning run, none of them shared, gets its own code back for the run
(``leave_cold``), so its accesses cost nothing and are neither points nor recorded; hot code, and code no learning
run has seen yet, stays watched.

What a sampled run can miss is a shared access in code that showed none when it was learned (a path a learning run
did not take): the learning runs come back ever sparser (the warm-up, then schedules 255, 1023, 4095, ...: each
fourth as far), and each one adds what it finds. So sampling is for the strategies that sample anyway (random, pct,
pos: ``samples_memory`` in ``racecheck.search.registry``): dfs and dpor, whose "exhausted" is a proof, replays,
shrinking and ``check_determinism`` always watch everything, a sampled run that fails is run again with every access
watched before it is reported (``racecheck.search.widening``), and only fully watched schedules can make a space
exhausted (``racecheck.search.coverage``). It engages only where it pays: when most of a learning run's accesses were
made in code it can leave unwatched (``_WORTH``). LiteRace (Marino, Musuvathi, Narayanasamy, PLDI 2009) samples hot code
for the same reason; here what is left out is decided by what the code touched, not by how often it ran.

A sampled run also shows a strategy less of each thread's progress: a watched getter called from unwatched helpers
again and again is one read at decision after decision, as a busy-wait is. The learning runs note such reads
(``recurring_reads``) so that pct's busy-wait rule does not lower a thread that is making progress
(``racecheck.search.busy_wait``).
"""

from __future__ import annotations

import types
from collections.abc import Iterable
from typing import Any

from racecheck.control import memory_discovery
from racecheck.runtime.access import MEMORY_OBJ, Access
from racecheck.runtime.relation import LOOKS
from racecheck.runtime.sinks import Sink
from racecheck.runtime.steps import Obj, ObjKind, RunEnd

__racecheck_engine__ = True

_READS = LOOKS  # the relation's reads and listings: two of them on one object commute
# Sampling engages when at least this many accesses of a learning run, and at least half of them, were made in
# code it would leave unwatched: below that a sampled run saves less than the learning runs cost.
_WORTH = 256


def learns(index: int) -> bool:
    """Whether schedule ``index`` of an exploration is a learning run: 255, 1023, 4095, ... (index + 1 a power of 4
    from 256 on; the warm-up run before schedule 0 is the first)."""
    n = index + 1
    return n >= 256 and n & (n - 1) == 0 and n.bit_length() % 2 == 1


def _group(obj: Obj) -> str:
    """What two accesses must share to conflict, taken wide: an item with its whole container (``dict#2['k']``
    with ``dict#2``), an attribute exactly."""
    return obj.name.split("[", 1)[0]


def shared_codes(records: Iterable[tuple[Any, int, tuple[Access, ...], bool]]) -> tuple[set[Any], set[Any], int]:
    """From one learning run's records: the codes that made accesses, those that touched shared memory, and how
    many records there were. Shared: an object two threads touched, one of them writing, once a second thread had
    been started (what the first thread did before that comes before every other thread's step in every schedule:
    an object's set-up); and unresolved memory always."""
    threads: dict[str, set[int]] = {}
    written: set[str] = set()
    by_code: dict[Any, set[str]] = {}
    seen: set[Any] = set()
    hot: set[Any] = set()
    count = 0
    for code, tid, accesses, together in records:
        count += 1
        seen.add(code)
        if not together:
            continue
        touched = by_code.setdefault(code, set())
        for access in accesses:
            obj = access.obj
            if obj is MEMORY_OBJ:
                hot.add(code)
                continue
            group = _group(obj)
            touched.add(group)
            threads.setdefault(group, set()).add(tid)
            if access.kind not in _READS:
                written.add(group)
    shared = {group for group, tids in threads.items() if len(tids) > 1 and group in written}
    hot.update(code for code, touched in by_code.items() if not touched.isdisjoint(shared))
    return seen, hot, count


def recurring_reads(records: Iterable[tuple[Any, int, tuple[Access, ...], bool]], cold: frozenset[Any]) -> set[tuple]:
    """The reads of watched code that one learning run saw a thread make again with only ``cold`` code's accesses
    between (``mode = registry.mode`` in a getter that unwatched helpers call one after another). A sampled run
    leaves those accesses out, so there the thread makes the read at decision after decision: what a busy-wait
    looks like (``racecheck.search.busy_wait``), though it is making progress (``Sampling.recurring``)."""
    last: dict[int, tuple[Access, ...]] = {}  # per thread, its last access in watched code ...
    between: dict[int, bool] = {}  # ... and whether cold code made one since
    found: set[tuple] = set()
    for code, tid, accesses, _together in records:
        if code in cold:
            between[tid] = True
            continue
        if between.get(tid) and last.get(tid) == accesses and _reads(accesses):
            found.add(accesses)
        last[tid] = accesses
        between[tid] = False
    return found


def _reads(accesses: tuple[Access, ...]) -> bool:
    return bool(accesses) and all(one.kind in _READS and one.obj.kind is ObjKind.MEMORY for one in accesses)


def _nested(code: types.CodeType) -> Iterable[types.CodeType]:
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield const
            yield from _nested(const)


class Sampling:
    """One exploration's sampled watching over its memory watch (``racecheck.control.memory_install.Watching``):
    what the learning runs found, and the functions a sampled run gives their own code back."""

    def __init__(self, watching: Any) -> None:
        self.watching = watching
        self.seen: set[Any] = set()
        self.hot: set[Any] = set()
        self.cold: frozenset[Any] = frozenset()
        self.engaged = False  # the next sampled runs leave the cold code unwatched
        self.stopped = False  # no more sampled runs in this exploration (``stop``)
        self.out: list[tuple[types.FunctionType, types.CodeType, types.CodeType]] = []  # (fn, own code, twin)
        self.ran: set[Any] | None = None  # the code the last learning run's watched code called
        # reads of hot code that a learning run saw made again with only cold code's accesses between: in a sampled
        # run one made again at decision after decision is no busy-wait (``recurring_reads``), handed to its
        # chooser through the run (``MemorySteps.recurring``)
        self.recurring: frozenset[tuple] = frozenset()

    def begin_learning(self) -> None:
        """A learning run starts: the functions its watched code calls are noted too (``memory_discovery.called``),
        so code whose accesses recorded nothing (all on immutable values, or private) is seen to have run."""
        memory_discovery.called = set()

    def end_learning(self) -> None:
        self.ran, memory_discovery.called = memory_discovery.called, None

    def learn(self, records: list[tuple[Any, int, tuple[Access, ...], bool]]) -> None:
        """What one learning run saw: the code it found sharing memory joins the hot code for good."""
        seen, hot, count = shared_codes(records)
        if self.ran is not None:
            seen |= self.ran
            self.ran = None
        self.seen |= seen
        self.hot |= hot
        cold = {code for code in self.seen - self.hot if code is not None}
        cold = {code for code in cold if all(inner not in self.hot for inner in _nested(code))}
        self.cold = frozenset(cold)
        self.recurring = self.recurring.union(recurring_reads(records, self.cold))
        in_cold = sum(1 for record in records if record[0] in self.cold)
        self.engaged = not self.stopped and in_cold >= _WORTH and 2 * in_cold >= count

    def stop(self) -> None:
        """No more sampled runs (a sampled space was run to its end: the rest must be watched whole)."""
        self.stopped = True
        self.engaged = False
        self.watch_all()

    def leave_cold(self) -> bool:
        """Before a sampled run: every function whose code is cold gets its own code back; False if sampling is
        not engaged (the run is then watched whole)."""
        if not self.engaged:
            self.watch_all()
            return False
        if self.out:
            return True
        cold = self.cold
        for fn, own in self.watching.swapped:
            twin = fn.__code__
            if twin in cold:
                fn.__code__ = own
                self.out.append((fn, own, twin))
                # a call of it, or of a closure it makes, from watched code is no reason to rewrite it again
                for code in (own, *_nested(own)):
                    memory_discovery.settle(code)
        return True

    def watch_all(self) -> None:
        """Before a run that watches everything: every function left unwatched gets its rewritten code back."""
        out, self.out = self.out, []
        for fn, own, twin in reversed(out):
            if fn.__code__ is own:
                fn.__code__ = twin
            for code in (own, *_nested(own)):
                memory_discovery.unsettle(code)


class Learner(Sink):
    """A learning run's sink (``racecheck.runtime.sinks``): from its start, the functions its watched code calls are
    noted (``Sampling.begin_learning``); at its end, what it recorded of every access it saw (its memory records'
    ``learning``, which the session turned on for it) is learned from."""

    def __init__(self, sampling: Sampling) -> None:
        self.sampling = sampling

    def begin(self, view: Any) -> None:
        self.sampling.begin_learning()

    def end(self, run_end: RunEnd) -> None:
        self.sampling.end_learning()
        # A run that brought code under watch as it went is learned from too: discovery brings a callee under watch
        # before it runs, so what ran unwatched is code reached only from C or the engine (as in any run)
        self.sampling.learn(run_end.memory_steps.learning)
