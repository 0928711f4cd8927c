"""The steps of plain memory accesses (``Run.memory`` and kin): what the memory hooks of
``racecheck.control.memory_hooks`` ask the run before every access they see.

A memory access is a scheduling point where another thread could run: the scheduler may let that thread go first,
and the access is then the operation of a step of its own. Where no other thread could run there is no decision to
make, and making a step anyway would cost a trace event for every attribute read of code that runs alone; the
access joins the step its thread is running instead (``merge_memory``), at a point of its own
(``TraceEvent.marks``), so that the step names it alike in every schedule however the steps were cut. Which
threads could run changes only when the run does something (a step, a note, any operation of a stand-in), so the
answer is kept until then (``Run.alone``).

``MemorySteps`` is a component of the run, not a part of its class: it holds the memory-access state and its own
records, and reads of the run only the narrow interface it is given (the trace, the threads, whether the run is
stopping or locating, ``alone``, ``candidates`` and ``schedule``). The run hands its hooks' entry points out as its
own (``Run.memory`` is this component's bound ``memory``): no extra call per access.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from racecheck import runtime
from racecheck.runtime.access import Access
from racecheck.runtime.locations import caller_location
from racecheck.runtime.records import unwind
from racecheck.runtime.trace import TraceEvent, add_access, set_access

if TYPE_CHECKING:
    from racecheck.runtime.records import ThreadRecord

__racecheck_engine__ = True

_state = runtime.thread_state


class MemorySteps:
    """The memory accesses of one run (``racecheck.runtime.scheduler.Run``), as steps or parts of steps.

    For the data-race report (``racecheck.search.data_races``) it also keeps, made when first needed: ``where``,
    the source line of each memory access that joined a running step ((thread, point) -> location, in runs with
    locations), and ``real_sync``, the takes and gives of real locks made before the run."""

    def __init__(self, run: Any) -> None:
        self.run = run
        self.where: dict[tuple[int, int], str] | None = None
        self.real_sync: list[tuple[int, int, int, int]] | None = None  # (thread, point, +1 take / -1 give, lock id)
        # Sampled watching (``racecheck.control.memory_sampling``): a learning run lists (code, thread, accesses,
        # whether another thread had been started) of every access it saw; a run widening a sampled one's decisions
        # knows the code the sampled run left unwatched (``cold_codes``) and names the thread whose access in it makes
        # the current decision (``cold_point``; -1: none), a decision the sampled run did not have.
        self.learning: list[tuple[Any, int, tuple[Access, ...], bool]] | None = None
        self.cold_codes: Any = None
        self.cold_point = -1
        self.sampled = False  # the run left code unwatched that showed no shared access (a sampled run)
        # ... and, for its chooser, the reads its watched code makes again after unwatched code's accesses
        # (``racecheck.control.memory_sampling.recurring_reads``): one repeated at decision after decision is no spin
        self.recurring: frozenset[tuple[Access, ...]] = frozenset()
        # (thread, point) of every access that was one atomic addition to a builtin container (``list.append``,
        # ``set.add``): two of them never make a data race by default (``racecheck.search.data_races``)
        self.atomic: set[tuple[int, int]] = set()

    def entry_points(self) -> tuple[Callable[..., Any], ...]:
        """What the run hands out as its own: ``memory``, ``memory_point``, ``replace_memory``, ``merge_memory``,
        ``real_lock``, ``flush_memory``, ``touch_running``."""
        return (self.memory, self.memory_point, self.replace_memory, self.merge_memory, self.real_lock,
                self.flush_memory, self.touch_running)

    def real_lock(self, me: ThreadRecord, change: int, lock: Any) -> None:
        """Thread ``me`` took (+1) or gave back (-1) a real lock made before the run, at its current point."""
        if self.real_sync is None:
            self.real_sync = []
        self.real_sync.append((me.tid, me.points, change, id(lock)))

    def memory(self, op: str, access: tuple[Access, ...], skip: int = 0, shown: str | None = None) -> None:
        """The calling thread is about to access plain memory (``access``): a scheduling point where another thread
        could run, so it may go first; where none could, no decision exists and the access joins the running step.
        Only the memory hooks call it, for a controlled thread of this run (``racecheck.control.memory_hooks``)."""
        if not self.memory_point(op, access, skip + 1, shown):
            self.merge_memory(access)

    def memory_point(self, op: str, declared: tuple[Access, ...], skip: int = 0, shown: str | None = None) -> bool:
        """The point before a memory access whose exact accesses depend on the state it meets (a key there or not,
        a list's length): True when it was a decision, a step of its own declaring ``declared`` (what it may
        touch), after which other threads may have run, so the caller reads the state again and says what it
        touched with ``replace_memory``; False when no other thread could run, the caller then adds what it touched
        to the running step with ``merge_memory``."""
        me = _state.thread
        run = self.run
        if run.aborting:
            unwind(me)
        if run.alone is me or me.real_held:
            return False
        if len(run.candidates(me, True)) > 1:
            if self.learning is not None and not declared[0].via:  # a hand-off's: not learned (``merge_memory``)
                self.learning.append((accessing_code(), me.tid, declared, True))
            if self.cold_codes is not None and accessing_code() in self.cold_codes:
                self.cold_point = me.tid
            try:
                # the object's text, not its __str__ (the same string): a Python call less per memory point
                text = declared[0].obj.text if shown is None else shown
                run.schedule(f"{op} {text}", access=declared, skip=skip + 1)
            finally:
                self.cold_point = -1
            return True
        run.alone = me
        return False

    def replace_memory(self, access: tuple[Access, ...]) -> None:
        """What the step ``memory_point`` just began touched, read from the state it met."""
        me = _state.thread
        if not self.run.aborting:
            set_access(self.run.trace, me.tid, access)

    def merge_memory(self, access: tuple[Access, ...]) -> None:
        """A memory access where no other thread could run: it joins the running step, at a point of its own."""
        me = _state.thread
        run = self.run
        # (a hand-off's accesses, ``Access.via``, are not learned from: how far its walk reaches can depend on what
        # the process did before, and what sampled runs watch must not)
        if self.learning is not None and not (access and access[0].via):
            self.learning.append((accessing_code(), me.tid, access, len(run.threads) > 1))
        merged = me.merged
        if not merged:
            me.merged_at = _running_index(run.trace, me.tid)
        me.points = point = me.points + 1
        kinds = me.merged_kinds
        for one in access:
            obj, kind = one.obj, one.kind
            if kinds.get(obj) != kind:  # a repeat of the last access to it adds nothing
                kinds[obj] = kind
                merged.append((one, point))
        if run.locate:  # its own line, for a data race report (a step's accesses share the step's)
            if self.where is None:
                self.where = {}
            self.where[(me.tid, point)] = caller_location(2)

    def atomic_addition(self) -> None:
        """The access the calling thread just made (its current point) was one operation that CPython makes atomic and
        that only adds to a container: no other thread's addition can be lost or torn by it."""
        me = _state.thread
        if me is not None and me.run is self.run:
            self.atomic.add((me.tid, me.points))

    def touch_running(self, me: ThreadRecord, access: tuple[Access, ...]) -> None:
        """``me``'s running step also touches ``access`` (``Run.touch``), which belongs to the code since its last
        point. Where that point was a memory access that joined the running step (a bare ``racecheck.point()``
        says the code before it touches anything), ``access`` joins at that access's point, as it would be on the
        step of its own that access makes where another thread could run: then an interleaving's key is the same
        however the steps were cut."""
        if not me.merged:
            add_access(self.run.trace, me.tid, access)
            return
        point = me.points
        kinds = me.merged_kinds
        for one in access:
            obj, kind = one.obj, one.kind
            if kinds.get(obj) != kind:
                kinds[obj] = kind
                me.merged.append((one, point))

    def flush_memory(self, me: ThreadRecord) -> None:
        """The memory accesses ``me``'s running step made where it ran alone, onto that step's trace event."""
        merged, me.merged = me.merged, []
        me.merged_kinds = {}
        index = me.merged_at
        me.merged_at = -1
        if index < 0 or not merged:
            return
        trace = self.run.trace
        event = trace[index]
        trace[index] = event._replace(
            access=event.access + tuple(one for one, _point in merged),
            marks=event.marks + tuple(point for _one, point in merged),
        )



def accessing_code() -> Any:
    """The code object of the program's frame making the memory access being recorded: the first frame outside
    racecheck's own modules."""
    frame = sys._getframe(2)
    while frame is not None and "__racecheck_engine__" in frame.f_globals:
        frame = frame.f_back
    return frame.f_code if frame is not None else None


def _running_index(trace: list[TraceEvent], tid: int) -> int:
    """The index of thread ``tid``'s running step in ``trace``: its last event that is not a note (-1: none)."""
    index = len(trace) - 1
    while index >= 0 and (trace[index].switch == "info" or trace[index].tid != tid):
        index -= 1
    return index
