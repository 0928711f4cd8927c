"""The controlled scheduler: real OS threads, one baton, a decision at every scheduling point.

Each controlled thread owns a real lock used as its baton; it runs only while it holds it. At a scheduling point
the running thread records what it is about to do, computes which threads could run, asks the chooser for one, and
if that is another thread, releases that thread's baton and parks on its own. Code between two points therefore
runs atomically, and a schedule is fully described by the sequence of decisions: replaying the same decisions
replays the same execution.

A blocked operation is a predicate ("this lock is free", "this future is done"): the thread is not a candidate
until the predicate holds. Timed waits carry a virtual deadline; virtual time advances only when nothing else can
run (every other step is taken to be instantaneous), so timeouts and sleeps are deterministic. The scheduler never
imports or knows about Lightning, the filesystem or any particular primitive.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any, NoReturn

from racecheck import runtime
from racecheck.errors import Abort, Crashed, Deadlock, InternalError, StepLimitExceeded, UncontrolledBlocking
from racecheck.runtime import teardown as run_end
from racecheck.runtime.access import END, NOTHING, ON_CLOCK, START, YIELDED, Access, on_thread
from racecheck.runtime.chooser import Chooser, Decision, RunView, value_finished
from racecheck.runtime.cleanup import Cleaned
from racecheck.runtime.fairness import after_pick, fair_candidates, note_yield
from racecheck.runtime.latch import Latch
from racecheck.runtime.locations import BOTTOM_CODE_IDS, caller_location, code_location, thread_bottom
from racecheck.runtime.memory_steps import MemorySteps
from racecheck.runtime.records import FailureInfo, RunConfig, ThreadRecord, never, release_quietly, unwind
from racecheck.runtime.sinks import Sink, StepLog
from racecheck.runtime.trace import TraceEvent, add_access, set_access
from racecheck.runtime.watchdog import describe_stuck, describe_waiters

__racecheck_engine__ = True

_state = runtime.thread_state  # ``_state.thread``: the calling thread's record (runtime.current_thread_record)
_tid_of = attrgetter("tid")  # the thread ids of candidates without a comprehension (a function call in 3.11)
VALUE_PICK = 0  # ``Run.picked`` for a value decision; a thread decision records the thread's id + 1
_new = tuple.__new__  # _new(TraceEvent or Decision, fields): without the Python-level __new__ (one per step, decision)


@dataclass
class Run:
    """One execution under control."""

    chooser: Chooser
    config: RunConfig = field(default_factory=RunConfig)
    sinks: tuple[Sink, ...] = ()  # what listens without choosing (``racecheck.runtime.sinks``): steps, the end

    def __post_init__(self) -> None:
        self.threads: list[ThreadRecord] = []
        self.current: ThreadRecord | None = None
        self.steps = 0
        self.clock = 0.0
        self.trace: list[TraceEvent] = []
        self.choices: list[int] = []
        self.arities: list[int] = []
        # The token's check data per decision: what was picked (thread id + 1, or VALUE_PICK) and at which step
        self.picked: list[int] = []
        self.decision_steps: list[int] = []
        self.preemptions = 0
        self.failure: FailureInfo | None = None
        self.aborting = False
        self.crashed = False
        self.crash_reason = ""
        self.done = Latch()
        self.resources: dict[str, Any] = {}
        self.leaked: list[str] = []
        self._counters: dict[str, int] = {}
        self._root: ThreadRecord | None = None
        self._recovering = False  # after a crash, the recovery phase's failures are real findings
        self._yielders: list[ThreadRecord] = []  # threads with a non-empty yield_to (fair scheduling)
        self._lonely_yielder: ThreadRecord | None = None  # yielded at the previous step with no one else to run
        self._max_steps = self.config.max_steps
        self.outside = 0  # threads inside a call that waits on another process (racecheck.control.external): not stuck
        self.cleanups: list[tuple[str, Callable[[], bool]]] = []  # undone if the run cannot be unwound
        self.cleaned: list[Cleaned] = []  # what was undone after threads that could not be unwound (cleanup.py)
        self.leaks_reported = False  # teardown has reported the threads it could not unwind
        self.locate = True  # source lines cost a stack walk per point: off for schedules nobody reads
        self.launch: Callable[[Any], None] | None = None  # a controlled thread's OS side: a carrier, or None: new
        self.watch: Any = None  # what watches its plain memory (``control.memory_names.Watch``), None: nothing
        # Code came under memory watch while this run went: some may have run unwatched, so it is run again
        self.stale = False
        self.watched_modules = 0  # how many modules were under memory watch as it began (its token names the later)
        # The only thread that can run, as last seen: its memory accesses join its step until the run changes.
        self.alone: ThreadRecord | None = None
        # Plain memory accesses: a component whose entry points are the run's own (bound: no extra call per access)
        self.memory_steps = MemorySteps(self)
        (self.memory, self.memory_point, self.replace_memory, self.merge_memory, self.real_lock, self.flush_memory,
         self.touch_running) = self.memory_steps.entry_points()
        self.view: RunView | None = RunView(self)  # what the chooser may read: handed now and at every decision
        self.finished = range(0)  # the events of the steps finished between the last two decisions: Decision.finished
        self.chooser.begin(self.view)
        # The run's steps, built once: as it goes while a sink takes them, else when first read; the sinks begin
        self.taken = StepLog.begin(self.trace, self.sinks, self.view)

    @property
    def root(self) -> ThreadRecord | None:
        """The first controlled thread of the current phase (the test function, or crash recovery)."""
        return self._root

    @property
    def recovering(self) -> bool:
        """In the crash-recovery phase (see ``reset_for_phase``)."""
        return self._recovering

    # ----- the contract offered to stand-ins and extensions (``runtime.RunContract``) -----------------------------

    def new_object_id(self, kind: str) -> str:
        """A logical name for a traced object ("Lock#3"), counted per kind and run, so stable across replays."""
        number = self._counters.get(kind, 0) + 1
        self._counters[kind] = number
        return f"{kind}#{number}"

    def now(self) -> float:
        """The virtual clock (seconds since the run began)."""
        return self.clock

    def schedule(self, op: str, *, access: tuple[Access, ...] = NOTHING, enabled: Callable[[], bool] | None = None,
                 timeout: float | None = None, yielding: bool = False, skip: int = 0) -> bool:
        """A scheduling point of the calling thread (see ``runtime.RunContract.schedule``)."""
        me = _state.thread  # caller_record()'s checks, inline: this is the hot path of every controlled program
        if me is None or me.run is not self:
            raise RuntimeError("racecheck: a controlled object was used by a thread outside its run")
        if self.aborting:
            unwind(me)
        if me.merged:
            self.flush_memory(me)
        if timeout is not None:
            return self._timed(me, op, access, enabled, timeout, yielding, skip + 1)
        me.points += 1
        # The common case (every lock, queue, executor and file point without a timeout): nothing to undo after.
        # A timed point comes back here through ``_timed``, so this is the one body of a point.
        me.op = op
        me.access = access
        if self.locate:  # else ``loc`` stays "": a run without locations never sets one
            me.loc = caller_location(2 + skip)
        me.enabled = enabled
        me.yielding = yielding
        self._step(me, True)
        me.enabled = None
        me.yielding = False
        return True

    def _timed(
        self, me: ThreadRecord, op: str, access: tuple[Access, ...], enabled: Callable[[], bool] | None,
        timeout: float, yielding: bool, skip: int,
    ) -> bool:
        """``schedule`` with a timeout: a poll (``timeout <= 0``), or a wait with a virtual deadline; either is a plain
        point, made by ``schedule`` again, with what the timeout adds around it. ``skip`` counts this frame too.
        A wait with a deadline also touches the virtual clock: whether it times out depends on the other waits on
        time."""
        if timeout <= 0 and enabled is not None:
            # A non-blocking attempt: a plain point, then look once.
            self.schedule(op, access=access, yielding=yielding, skip=skip + 1)
            return bool(enabled())
        me.deadline = self.clock + timeout
        self.schedule(op, access=access + ON_CLOCK, enabled=enabled, yielding=yielding, skip=skip + 1)
        timed_out = me.timed_out and not (enabled is not None and enabled())
        me.deadline = None
        me.timed_out = False
        return not timed_out

    def add_cleanup(self, description: str, action: Callable[[], bool]) -> None:
        """See ``runtime.add_cleanup``."""
        self.cleanups.append((description, action))

    def sleep(self, seconds: float) -> None:
        """A point that lets ``seconds`` of virtual time pass for the caller (``sleep(0)`` only yields)."""
        seconds = max(float(seconds), 0.0)
        if seconds == 0:
            self.schedule("sleep 0", yielding=True)
        else:
            self.schedule(f"sleep {seconds:g}", enabled=never, timeout=seconds, yielding=True)

    def choose(self, n: int, label: str) -> int:
        """A value decision (see ``runtime.RunContract.choose``)."""
        self.caller_record()
        if n <= 1:
            return 0
        self.finished = value_finished(self.trace, self.finished.stop)  # the running step has not finished
        try:
            value = self.chooser.pick_value(n, label)
        except Exception as exc:  # noqa: BLE001 - a strategy's bug is racecheck's own failure
            self._internal(exc, self.caller_record())
        self._record(n, value)
        self.note(f"choose {label} -> {value}")
        return value

    def effect(self, op: str, skip: int = 0, access: tuple[Access, ...] = NOTHING) -> None:
        """A traced effect that only a thread of this run may have (a release): ``caller_record``'s checks, then the
        event ``note`` would add, so a thread outside the run raises instead of tracing into it."""
        me = self.caller_record()
        self.alone = None
        loc = caller_location(2 + skip) if self.locate else ""
        self.trace.append(_new(TraceEvent, (self.steps, me.tid, op, loc, "info", access, me.points, ())))

    def note(self, op: str, skip: int = 0, access: tuple[Access, ...] = NOTHING) -> None:
        """A traced effect that is not a scheduling point (a release, a notify)."""
        me = _state.thread
        if me is not None and me.run is self:
            self.alone = None
            loc = caller_location(2 + skip) if self.locate else ""
            self.trace.append(_new(TraceEvent, (self.steps, me.tid, op, loc, "info", access, me.points, ())))

    def touch(self, access: tuple[Access, ...]) -> None:
        """The caller's running step also touches ``access`` (see ``runtime.RunContract.touch``)."""
        me = _state.thread
        if me is not None and me.run is self and not self.aborting:
            self.touch_running(me, access)

    def narrow(self, access: tuple[Access, ...]) -> None:
        """The caller's running step touched only ``access`` (see ``runtime.RunContract.narrow``)."""
        me = _state.thread
        if me is not None and me.run is self and not self.aborting:
            set_access(self.trace, me.tid, access)

    def caller_record(self) -> ThreadRecord:
        """The calling thread's record. Raises if the caller is not a thread of this run (a controlled object used
        by a thread outside it), and stops the caller (``unwind``) if the run is being stopped: the checks every
        effect that only a thread of the run may have makes first."""
        me = _state.thread
        if me is None or me.run is not self:
            raise RuntimeError("racecheck: a controlled object was used by a thread outside its run")
        if self.aborting:
            unwind(me)
        self.alone = None  # the caller is about to change something another thread may wait on
        return me

    def crash(self, reason: str) -> NoReturn:
        """A simulated power loss here: the run stops (see ``runtime.RunContract.crash``)."""
        me = self.caller_record()
        self.crashed = True
        self.crash_reason = reason
        self.trace.append(TraceEvent(self.steps, me.tid, f"CRASH ({reason})", caller_location(), "info"))
        self.aborting = True
        self.done.set()
        raise Crashed(reason)

    # ----- threads ----------------------------------------------------------------------------------------------

    def play_root(self, fn: Callable[[], Any], thread: Any) -> ThreadRecord:
        """Run ``fn`` as the first controlled thread of a phase (the test function, or crash recovery) on the
        calling thread, ``thread`` (the carrier: an uncontrolled thread that outlives the run). Returns when the
        root's body has ended; threads it started may still run (``done`` says when the phase is over)."""
        rec = self._register(thread, fn)
        rec.carried = True
        self._root = rec
        rec.launched = True
        self.current = rec
        self.trace.append(TraceEvent(self.steps, rec.tid, "begin", rec.loc, "switch", rec.access, rec.points))
        rec.baton.release()  # its turn before it starts: its first acquire does not block
        rec.body()
        return rec

    def start_thread(self, thread: Any, real_start: Callable[[Any], None]) -> None:
        """Called from a controlled thread's ``Thread.start()``: the new thread joins the run."""
        rec = self._register(thread)  # reserve the logical id so the trace names it
        self.schedule(f"start T{rec.tid}", access=on_thread(rec.tid, START))
        rec.background = bool(thread.daemon) or bool(getattr(thread, "_racecheck_background", False))
        thread.daemon = True  # a thread stuck in uncontrolled code must never keep the process alive
        rec.launched = True
        launch = self.launch
        if launch is None:
            real_start(thread)
        else:
            launch(thread)

    def _register(self, thread: Any, target: Callable[[], Any] | None = None) -> ThreadRecord:
        """A record for ``thread`` in this run. Its controlled body runs ``target``, or the thread's own ``run``;
        it becomes the thread's ``run`` unless the thread is a carrier (already running, handed the body)."""
        rec = ThreadRecord(len(self.threads), self, thread)
        self.threads.append(rec)
        thread._racecheck_record = rec
        target_run = target if target is not None else thread.run
        run = self

        def controlled_body() -> None:
            runtime.bind(run, rec)
            rec.baton.acquire()
            try:
                if not run.aborting:
                    rec.started = True
                    target_run()
            except Abort:
                pass
            except Crashed:
                pass
            except BaseException as exc:  # noqa: BLE001 - every escaping exception is a finding
                run._fail("exception", exc, rec)
            finally:
                try:
                    run._exit(rec)
                finally:
                    runtime.bind(None, None)
                    rec.exited.set()
                    if run.aborting:
                        run._wake_root(rec)

        if id(controlled_body.__code__) not in BOTTOM_CODE_IDS:
            thread_bottom(controlled_body)
        rec.body = controlled_body
        if target is None:
            thread.run = controlled_body
        rec.loc = code_location(target or getattr(thread, "_target", None) or target_run) if self.locate else ""
        return rec

    def _wake_root(self, leaving: ThreadRecord) -> None:
        """``leaving`` has left a run that is being stopped: if the phase's root is parked, let it unwind. The root
        runs on the carrier, which tears the run down once the root is back, so a run that ends while its root
        waits (a failure in another thread, a deadlock) is unwound without the supervisor's help."""
        root = self._root
        if root is None or root is leaving or root.finished or not root.launched:
            return
        release_quietly(root.baton)

    def _exit(self, rec: ThreadRecord) -> None:
        if rec.merged:
            self.flush_memory(rec)
        rec.finished = True
        if self.aborting:
            return
        rec.points += 1
        self.trace.append(
            _new(TraceEvent, (self.steps, rec.tid, "exit", "", "info", on_thread(rec.tid, END), rec.points, ()))
        )
        rec.op = "exit"
        rec.access = NOTHING
        self._step(rec, alive=False)

    # ----- the decision -----------------------------------------------------------------------------------------

    def recorded_steps(self) -> list[int]:
        """The step of every decision, then the run's last step (a token's step check data)."""
        return [*self.decision_steps, self.steps]

    def _record(self, n: int, value: int) -> None:
        """A value decision, as ``_step`` records a thread decision inline: its arity, choice, pick and step."""
        self.arities.append(n)
        self.choices.append(value)
        self.picked.append(VALUE_PICK)
        self.decision_steps.append(self.steps)

    def candidates(self, me: ThreadRecord, alive: bool) -> list[ThreadRecord]:
        """Who could run now: ``me`` first (choice 0 = no preemption), then the others by logical id.
        ``can_run`` inlined: this runs at every step, over every thread."""
        out = [me] if alive and (me.enabled is None or me.timed_out or me.enabled()) else []
        for rec in self.threads:
            if rec is not me and rec.launched and not rec.finished:
                enabled = rec.enabled
                if enabled is None or rec.timed_out or enabled():
                    out.append(rec)
        return out

    def _advance_clock(self) -> bool:
        deadlines = [r.deadline for r in self.threads if r.launched and not r.finished and r.deadline is not None]
        if not deadlines:
            return False
        self.clock = max(self.clock, min(deadlines))
        for rec in self.threads:
            if not rec.finished and rec.deadline is not None and rec.deadline <= self.clock:
                rec.timed_out = True
        return True

    def _step(self, me: ThreadRecord, alive: bool) -> None:
        """One scheduling step: who runs next, recorded in the trace; hands the baton over if it is someone else.

        The hot path of every controlled program (every point of every thread): the common cases (one candidate,
        or a decision without yields in play) touch no more than they need."""
        self.alone = None
        self.steps = steps = self.steps + 1
        if steps > self._max_steps:
            self._fail(
                "step-limit",
                StepLimitExceeded(f"more than {self._max_steps} scheduling steps (livelock, or raise max_steps)"),
                me,
            )
            self._stop(me, alive)
            return
        candidates = self.candidates(me, alive)
        if not candidates:
            candidates = self._wake_or_finish(me, alive)
            if not candidates:
                return
        yielding = alive and me.yielding
        if yielding or self._yielders or self._lonely_yielder is not None:
            candidates = self._fairness(me, candidates, yielding)
        chosen = candidates[0]
        current_enabled = alive and chosen is me
        if len(candidates) > 1:
            self.finished = finished = range(self.finished.stop, len(self.trace))  # every event so far is final
            try:
                index = self.chooser.pick_thread(_new(Decision, (
                    [*map(_tid_of, candidates)], current_enabled, yielding, me.tid if alive else None, steps,
                    self.view, finished)))
            except Exception as exc:  # noqa: BLE001 - a strategy's bug is racecheck's own failure
                return self._internal(exc, me, alive)
            self.arities.append(len(candidates))
            self.choices.append(index)
            chosen = candidates[index]
            self.picked.append(chosen.tid + 1)
            self.decision_steps.append(steps)
        if self._yielders:
            self._yielders = after_pick(self._yielders, chosen)
        if self.taken.sinks:  # every event so far is final: the steps they make go to the sinks before a new one
            self.taken.advance()
        if chosen is me:
            self.trace.append(_new(TraceEvent, (steps, me.tid, me.op, me.loc, "", me.access, me.points, ())))
            return
        if current_enabled:
            self.preemptions += 1
        switch = "preempt" if current_enabled else "switch"
        self.trace.append(_new(TraceEvent, (steps, chosen.tid, chosen.op, chosen.loc, switch, chosen.access,
                                              chosen.points, ())))
        self.current = chosen
        chosen.baton.release()
        if alive:
            me.baton.acquire()
            if self.aborting:
                unwind(me)

    def _wake_or_finish(self, me: ThreadRecord, alive: bool) -> list[ThreadRecord]:
        """Nobody can run: let virtual time pass to the next deadline, or end the run (complete, or deadlock)."""
        while self._advance_clock():
            candidates = self.candidates(me, alive)
            if candidates:
                return candidates
        unfinished = [r for r in self.threads if r.launched and not r.finished]
        root_done = self._root is None or self._root.finished
        if not unfinished or (root_done and all(r.background for r in unfinished)):
            run_end.complete(self)  # the run is complete; background threads still parked are torn down
            self._stop(me, alive)
            return []
        self._fail("deadlock", Deadlock(describe_waiters(unfinished)), me)
        self._stop(me, alive)
        return []

    def _fairness(self, me: ThreadRecord, candidates: list[ThreadRecord], yielding: bool) -> list[ThreadRecord]:
        """The candidates once fair scheduling (``racecheck.runtime.fairness``) has had its say (only called while
        yields are in play)."""
        if yielding:
            add_access(self.trace, me.tid, YIELDED)  # the step that ended here decides who runs before it again
            if len(candidates) == 1 and candidates[0] is me:
                # Only the yielder could run. Once is a poll that failed (a drain loop's last get_nowait): go on.
                # Twice in a row is a spin: in real time the threads it waits for (timed sleeps, timeouts) would
                # wake up, so virtual time moves to the next deadline.
                if self._lonely_yielder is me and self._advance_clock():
                    candidates = self.candidates(me, True)
                self._lonely_yielder = me
            else:
                self._lonely_yielder = None
            note_yield(me, candidates, self._yielders)
        else:
            self._lonely_yielder = None
        if self._yielders and len(candidates) > 1:
            candidates = fair_candidates(candidates)
        return candidates

    def _stop(self, me: ThreadRecord, alive: bool) -> None:
        self.aborting = True
        self.done.set()
        if alive:
            unwind(me)

    def _internal(self, exc: Exception, me: ThreadRecord, alive: bool = True) -> None:
        """The chooser raised at a decision: the run ends with racecheck's own failure (``InternalError``, which the
        search raises), never one of the program's; ``me`` unwinds (if alive) like any thread of a stopped run."""
        self.failure = FailureInfo("internal", InternalError.of(exc, "the strategy's chooser"), me.tid)
        self._stop(me, alive)

    def _fail(self, kind: str, exc: BaseException, rec: ThreadRecord | None) -> None:
        if self.failure is None and (not self.crashed or self._recovering):
            self.failure = FailureInfo(kind, exc, None if rec is None else rec.tid)
        self.aborting = True
        self.done.set()

    # ----- supervision (runs on the explorer's own, uncontrolled thread) ---------------------------------------

    def fail_stuck(self) -> None:
        """The supervisor's verdict (see ``watchdog.Watch``): the running thread is stuck in uncontrolled code."""
        rec = self.current
        message = describe_stuck(rec, self.config.watchdog, self.outside)
        self._fail("uncontrolled-blocking", UncontrolledBlocking(message), rec)
        if rec is not None:
            self.leaked.append(f"T{rec.tid}")

    # ----- the end of the run (``racecheck.runtime.teardown``) ------------------------------------------------------

    teardown, drop_locations, detach, ending, close_sinks = (
        run_end.teardown, run_end.drop_locations, run_end.detach, run_end.ending, run_end.close_sinks)

    def reset_for_phase(self) -> None:
        """Prepare a second phase (recovery after a crash) on the same run: same choice stream and clock."""
        self.aborting = False
        self._recovering = True
        self.done = Latch()

