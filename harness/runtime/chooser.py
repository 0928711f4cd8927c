"""What the scheduler asks at a decision, and what it hands the chooser that answers: the one interface every
strategy's per-execution chooser implements.

A chooser sees only what it is handed (as Shuttle's ``Scheduler::next_task(runnable, current, is_yielding)`` does):

* ``begin(view)`` once, before the run's first decision: a ``RunView``, the run's state as a chooser may read it
  (its trace so far, its step count, the threads' pending operations, the decisions taken so far);
* ``pick_thread(decision)`` at every decision between threads (``Decision``: who can run, the current thread,
  whether it yields, the step, the steps finished since the last decision; ``enabled[0]`` is the current thread
  when it can run, so 0 is never a preemption);
* ``pick_value(n, label)`` at every value decision (a fault, a crash point, a drawn datum; the steps finished since
  the last decision are ``view.finished``: the running step made this one, so it is not among them);
* ``end(run_end)`` once the run has ended (``RunEnd``: outcome, steps, picks, trace, what waiting threads were
  about to do);
* ``fresh()``: a chooser in the state this one began in, for a run that must be run again (code came under memory
  watch while it ran: ``Run.stale``).

It lives in the runtime because the run consumes it; the strategies that implement it live in ``racecheck.search``.
No chooser reaches the run any other way (``runtime.current_run()``, attributes set on it from outside).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from racecheck.runtime.sinks import StepReader
from racecheck.runtime.steps import Pending, RunEnd, Step

__racecheck_engine__ = True


class RunView:
    """A run's state as choosers read it, read-only, as it is at the moment of reading: one per run."""

    __slots__ = ("_run", "_reader")

    def __init__(self, run: Any) -> None:
        self._run = run
        self._reader: StepReader | None = None  # made on the first read of the steps a decision hands

    @property
    def trace(self) -> Sequence[Any]:
        """The trace events so far (``racecheck.runtime.trace.TraceEvent``); never change it."""
        return self._run.trace

    @property
    def steps(self) -> int:
        """Scheduling steps so far."""
        return self._run.steps

    @property
    def picked(self) -> Sequence[int]:
        """The decisions so far: the thread picked at each (thread id + 1), or 0 for a value."""
        return self._run.picked

    @property
    def finished(self) -> range:
        """The trace indices of the events of the steps finished between the run's previous decision and its
        latest (the one being made, during ``pick_thread`` or ``pick_value``): ``Decision.finished`` for a thread
        decision; at a value decision the step that makes it is still running, so it is left for the next one."""
        return self._run.finished

    def steps_finished(self) -> list[Step]:
        """The steps of ``finished`` (built on this call)."""
        return self.steps_in(self._run.finished)

    def steps_in(self, finished: range) -> list[Step]:
        """The steps of a range of the trace a decision handed (``Decision.finished``), numbered as the run's,
        built on this call by the runtime's one assembly (``racecheck.runtime.sinks``): a range always starts at a
        step's event and ends where a step has finished, so every step is whole."""
        reader = self._reader
        if reader is None or reader.trace is not self._run.trace:
            reader = self._reader = StepReader(self._run.trace)
        return reader.steps(finished.start, finished.stop)

    @property
    def watched(self) -> bool:
        """The run watches plain memory: every shared access of the code control reaches is a step's access."""
        return self._run.watch is not None

    @property
    def cold_point(self) -> int:
        """The thread whose access in code a sampled run left unwatched makes this decision (-1: none), for a run
        that widens a sampled one (``racecheck.search.widening``)."""
        return self._run.memory_steps.cold_point

    @property
    def recurring(self) -> frozenset[tuple[Any, ...]]:
        """In a sampled run, the reads its watched code makes again after accesses of the code it left unwatched:
        repeated at decision after decision there, they are no busy-wait (``racecheck.search.busy_wait``)."""
        return self._run.memory_steps.recurring

    @property
    def real_sync(self) -> Sequence[tuple[int, int, int, int]] | None:
        """The takes and gives of real locks made before the run, so far ((thread, point, +1 / -1, lock id); None:
        none), for the data-race sink that orders by them as the run goes (``racecheck.search.race_clocks``)."""
        return self._run.memory_steps.real_sync

    def thread(self, tid: int) -> Pending | None:
        """What thread ``tid`` is about to do (None: the run has no such thread)."""
        threads = self._run.threads
        if tid >= len(threads):
            return None
        return _pending(threads[tid], True)

    def pending(self) -> list[Pending]:
        """What every thread of the run is about to do (or did last), by thread id (``runnable`` left None: asking
        every thread's wait whether it could end costs; ``thread`` asks it)."""
        return [_pending(rec, False) for rec in self._run.threads]

    @property
    def running(self) -> Pending | None:
        """The thread at the scheduling point (None: none yet)."""
        rec = self._run.current
        return None if rec is None else _pending(rec, False)


def value_finished(trace: Sequence[Any], start: int) -> range:
    """At a value decision: the events from ``start`` (where the last decision's finished steps ended) up to the
    event of the running step, which made the decision and so has not finished (its notes, ``info`` events, come
    after its event)."""
    end = len(trace) - 1
    while end > start and trace[end].switch == "info":
        end -= 1
    return range(start, max(end, start))


def _pending(rec: Any, ask: bool) -> Pending:
    state = "finished" if rec.finished else "running" if rec.launched else "not started"
    runnable = (state == "running" and rec.can_run()) if ask else None
    return Pending(rec.tid, rec.op, rec.loc, rec.access, rec.points, state, runnable)


class Decision(NamedTuple):
    """A decision between threads: ``enabled`` (logical thread ids; ``enabled[0]`` is the current thread when it can
    run), ``current_enabled``, ``yielding`` (the current thread just yielded: ``sleep``, a polling retry; the scheduler
    has already left it out of ``enabled`` while anyone else can run, so leaving it is never a preemption),
    ``current`` (the thread at the point, None when it is exiting), ``step`` (the run's step), ``view`` (the run,
    as ``begin`` handed it; ``view.pending()`` says what each live thread is about to do), and ``finished``: the
    steps finished since the run's last decision (a thread's or a value's), as the range of trace indices of their
    events, so that a chooser that does not read them costs the run one ``range`` per decision; ``steps_finished()``
    builds them (the runtime's one assembly, ``racecheck.runtime.sinks.build``)."""

    enabled: list[int]
    current_enabled: bool
    yielding: bool
    current: int | None
    step: int
    view: RunView
    finished: range = range(0)

    def steps_finished(self) -> list[Step]:
        """The steps of ``finished``, in the order they ran (built on this call: ``RunView.steps_in``)."""
        return self.view.steps_in(self.finished)


class Chooser:
    """One execution's source of decisions."""

    def begin(self, view: RunView) -> None:
        """The run is about to start; ``view`` is what the chooser may read of it until it ends."""

    def pick_thread(self, decision: Decision) -> int:
        """An index into ``decision.enabled``."""
        raise NotImplementedError

    def pick_value(self, n: int, label: str) -> int:
        """A value in ``range(n)`` for the choice ``label``."""
        raise NotImplementedError

    def end(self, run_end: RunEnd) -> None:
        """The run has ended."""

    def fresh(self) -> Chooser:
        """A chooser in the state this one began in (for a run that must be run again)."""
        raise NotImplementedError(f"{type(self).__name__} cannot be run again")

    # Code the run leaves unwatched, where an access makes a decision of its own the chooser answers itself
    # (``racecheck.search.widening``); None for every other chooser.
    cold_codes: Any = None
