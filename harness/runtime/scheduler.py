"""The controlled scheduler: real OS threads, one baton, a decision at every scheduling point.

Each controlled thread owns a real lock used as its baton; it runs only while it holds it. At a scheduling point
the running thread records what it is about to do, computes which threads could run, asks the chooser for one, and
if that is another thread, releases that thread's baton and parks on its own. Code between two points therefore
runs atomically, and a schedule is fully described by the sequence of decisions: replaying the same decisions
replays the same execution.

A blocked operation is a predicate ("this lock is free", "this future is done"): the thread is not a candidate
until the predicate holds. Timed waits carry a virtual deadline; virtual time advances only when nothing else can
run (every other step is taken to be instantaneous), so timeouts and sleeps are deterministic.

The scheduler never imports or knows about Lightning, the filesystem or any particular primitive.
"""

from __future__ import annotations

import gc
import sys
import threading
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any, NoReturn

from racecheck import runtime
from racecheck.errors import Crashed, Deadlock, RacecheckError, StepLimitExceeded, UncontrolledBlocking, _Abort
from racecheck.runtime import cleanup as _cleanup
from racecheck.runtime.chooser import Chooser
from racecheck.runtime.cleanup import Cleaned
from racecheck.runtime.latch import Latch
from racecheck.runtime.trace import TraceEvent, display_path, frame_path

__racecheck_engine__ = True

_state = runtime.thread_state  # ``_state.thread``: the calling thread's record (runtime.current_thread_record)
_tid_of = attrgetter("tid")  # the thread ids of candidates without a comprehension (a function call in 3.11)
VALUE_PICK = 0  # ``Run.picked`` for a value decision; a thread decision records the thread's id + 1
_event = tuple.__new__  # _event(TraceEvent, fields): a TraceEvent without the Python-level __new__ (twice as fast)

_real_is_alive = threading.Thread.is_alive  # teardown asks of OS threads, not of the run's logical ones
_real_join = threading.Thread.join
_real_monotonic = __import__("time").monotonic

_SKIP_FILES: set[str] = set()
for _mod_name in ("threading", "queue", "concurrent.futures._base", "concurrent.futures.thread", "contextlib"):
    _mod = sys.modules.get(_mod_name) or __import__(_mod_name, fromlist=["_"])
    if getattr(_mod, "__file__", None):
        _SKIP_FILES.add(_mod.__file__)


_USER, _ENGINE, _BOTTOM = 0, 1, 2  # what a frame's code is to the walk: the answer, skipped, or nothing beyond
# id(code) -> [code, kind, {instruction offset: "path.py:line" as traces show it}]. Keyed by identity: a code
# object's hash is not cached by CPython and covers its constants and names (0.2-1.3 µs per lookup, measured, and
# the walk asked twice per frame). The entry holds the code itself, so its id cannot be reused while it is cached.
_CODES: dict[int, list[Any]] = {}
_BOTTOM_IDS: set[int] = set()  # engine functions at the bottom of a thread: no code under test above them
_BOTTOM_KEEP: list[Any] = []  # their code objects, kept alive so the ids above stay theirs
_CACHE_LIMIT = 50_000  # code created at run time (exec, lambdas in generated code) must not grow the cache forever


def thread_bottom(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Mark an engine function that a thread starts in (a controlled thread's body, an executor worker's loop):
    a location walk that reaches it stops there, as nothing above it belongs to the code under test. Without
    this, every point of an executor worker walked (and turned into frame objects) its whole stack."""
    code = fn.__code__
    if id(code) not in _BOTTOM_IDS:
        _BOTTOM_IDS.add(id(code))
        _BOTTOM_KEEP.append(code)
    _CODES.pop(id(code), None)
    return fn


def _classify(code: Any, frame: Any) -> list[Any]:
    """The cache entry of ``code``: whether the walk skips it, stops at it or answers with it."""
    if id(code) in _BOTTOM_IDS:
        kind = _BOTTOM
    elif frame.f_globals.get("__racecheck_engine__") or code.co_filename in _SKIP_FILES:
        kind = _ENGINE
    else:
        kind = _USER
    if len(_CODES) >= _CACHE_LIMIT:
        _CODES.clear()
    entry = _CODES[id(code)] = [code, kind, {}]
    return entry


def caller_location(depth: int = 2) -> str:
    """file:line of the innermost frame that belongs to the code under test (not the engine, not stdlib sync).

    Called at every scheduling point, so both questions asked of a frame are memoised per code object: whether
    its code is to be skipped, and the display text of each of its instructions. The text is exactly what the
    uncached walk produced, so traces stay byte-identical.

    ``depth`` is where the walk starts. Every frame the walk passes through has to become a frame object (CPython
    3.11+ creates them lazily), which made this walk the largest cost of a baton handoff; so callers that know how
    many engine frames sit between them and the user's code say so (``schedule(..., skip=n)``), and
    ``sys._getframe`` jumps over those without creating them. The walk still goes on past any other engine frame,
    so a hint only ever names frames that are certainly the engine's; it stops at a thread's bottom."""
    frame = sys._getframe(depth)
    codes = _CODES
    while frame is not None:
        code = frame.f_code
        entry = codes.get(id(code))
        if entry is None:
            entry = _classify(code, frame)
        kind = entry[1]
        if kind == _USER:
            lasti = frame.f_lasti  # the instruction, not the line: f_lineno scans the code's line table
            location = entry[2].get(lasti)
            if location is None:
                location = entry[2][lasti] = f"{frame_path(frame)}:{frame.f_lineno}"
            return location
        if kind == _BOTTOM:
            break
        frame = frame.f_back
    return ""  # an engine-internal thread (an executor worker's own loop): the op text says enough


def _code_location(fn: Any) -> str:
    code = getattr(fn, "__code__", None) or getattr(getattr(fn, "__func__", None), "__code__", None)
    if code is None:
        return ""
    module = getattr(fn, "__module__", None) or getattr(getattr(fn, "__func__", None), "__module__", None)
    return f"{display_path(code.co_filename, module)}:{code.co_firstlineno}"


class ThreadRecord:
    """The scheduler's view of one controlled thread."""

    __slots__ = (
        "tid", "run", "thread", "baton", "started", "finished", "op", "loc", "enabled", "deadline",
        "timed_out", "yielding", "background", "exited", "launched", "yield_to", "body", "carried", "unwinding",
    )

    def __init__(self, tid: int, run: Run, thread: Any) -> None:
        self.tid = tid
        self.run = run
        self.thread = thread
        self.baton = runtime.real_allocate_lock()
        self.baton.acquire()  # held = "not your turn"
        self.started = False
        self.finished = False
        self.op = "begin"
        self.loc = ""
        self.enabled: Callable[[], bool] | None = None
        self.deadline: float | None = None
        self.timed_out = False
        self.yielding = False
        self.background = False  # daemon threads and idle executor workers may be left blocked at the end
        self.exited = Latch()
        self.launched = False  # its OS thread exists (a reserved record waits for the "start" point first)
        self.yield_to: set[int] | None = None  # after a yield: the threads that must run before this one again
        self.body: Callable[[], None] | None = None  # what its OS thread runs: the controlled body
        self.carried = False  # runs on a carrier that outlives the run (never joined by teardown)
        self.unwinding = False  # the run being stopped, an _Abort was raised in this thread

    @property
    def name(self) -> str:
        return f"T{self.tid}"

    def can_run(self) -> bool:
        return self.timed_out or self.enabled is None or bool(self.enabled())


@dataclass
class FailureInfo:
    kind: str  # "exception", "deadlock", "uncontrolled-blocking", "step-limit", "divergence"
    exception: BaseException
    tid: int | None

    def signature(self) -> tuple:
        """What "fails the same way" means for shrinking: kind, exception type and where it was raised."""
        where = ""
        tb = self.exception.__traceback__
        while tb is not None:
            where = f"{frame_path(tb.tb_frame)}:{tb.tb_lineno}"
            tb = tb.tb_next
        return (self.kind, type(self.exception).__name__, where if self.kind == "exception" else "")


@dataclass
class RunConfig:
    max_steps: int = 20000
    watchdog: float | None = 2.0  # seconds without a scheduling point before a block is called uncontrolled
    epoch: float = 1_700_000_000.0  # what time.time() reads at virtual time 0


@dataclass
class Run:
    """One execution under control."""

    chooser: Chooser
    config: RunConfig = field(default_factory=RunConfig)

    def __post_init__(self) -> None:
        self.threads: list[ThreadRecord] = []
        self.current: ThreadRecord | None = None
        self.steps = 0
        self.clock = 0.0
        self.trace: list[TraceEvent] = []
        self.choices: list[int] = []
        self.arities: list[int] = []
        # The token's check data, one entry per decision: what was picked (thread id + 1, or VALUE_PICK for a
        # value) and at which step. Kept by the run itself rather than by a wrapper around the chooser: a layer
        # more at every decision was measurable (each object a decision touches is cache-cold after the code
        # under test ran).
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
        self._leaks_reported = False
        # Source locations in the trace ("file.py:12" of the user's line at each point). Finding one walks the
        # stack at every point and note (measured: ~110 µs of a 4 ms micro-workload schedule, and more in frame
        # objects made and freed): explore turns it off for schedules nobody will read, and runs a failing one
        # again with it on (same decisions, same trace, now with locations) before reporting it.
        self.locate = True
        # How a controlled thread's OS side is started: on a reused carrier (``racecheck.runtime.carrier_pool``, set by
        # explore), or with None by ``Thread.start``'s own machinery (a new OS thread).
        self.launch: Callable[[Any], None] | None = None

    @property
    def root(self) -> ThreadRecord | None:
        """The first controlled thread of the current phase (the test function, or crash recovery)."""
        return self._root

    @property
    def recovering(self) -> bool:
        """In the crash-recovery phase (see ``reset_for_phase``)."""
        return self._recovering

    # ----- the contract offered to primitives and extensions (see runtime.py) ---------------------------------

    def new_object_id(self, kind: str) -> str:
        number = self._counters.get(kind, 0) + 1
        self._counters[kind] = number
        return f"{kind}#{number}"

    def now(self) -> float:
        return self.clock

    def schedule(
        self,
        op: str,
        *,
        enabled: Callable[[], bool] | None = None,
        timeout: float | None = None,
        yielding: bool = False,
        skip: int = 0,
    ) -> bool:
        me = _state.thread
        if me is None or me.run is not self:
            raise RuntimeError("racecheck: a controlled object was used by a thread outside its run")
        if self.aborting:
            unwind(me)
        if timeout is not None:
            return self._timed(me, op, enabled, timeout, yielding, skip + 1)
        # The common case (every lock, queue, executor and file point without a timeout): nothing to undo after.
        me.op = op
        if self.locate:  # else ``loc`` stays "": a run without locations never sets one
            me.loc = caller_location(2 + skip)
        me.enabled = enabled
        me.yielding = yielding
        self._step(me, True)
        me.enabled = None
        me.yielding = False
        return True

    def _timed(
        self, me: ThreadRecord, op: str, enabled: Callable[[], bool] | None, timeout: float, yielding: bool, skip: int
    ) -> bool:
        """``schedule`` with a timeout: a poll (``timeout <= 0``) or a wait with a virtual deadline. ``skip`` counts
        this frame too."""
        if timeout <= 0 and enabled is not None:
            # A non-blocking attempt: a plain point, then look once.
            self.schedule(op, yielding=yielding, skip=skip + 1)
            return bool(enabled())
        me.op = op
        if self.locate:
            me.loc = caller_location(2 + skip)
        me.enabled = enabled
        me.deadline = self.clock + timeout
        me.yielding = yielding
        self._step(me, True)
        timed_out = me.timed_out and not (enabled is not None and enabled())
        me.enabled = None
        me.deadline = None
        me.timed_out = False
        me.yielding = False
        return not timed_out

    def add_cleanup(self, description: str, action: Callable[[], bool]) -> None:
        """See ``runtime.add_cleanup``."""
        self.cleanups.append((description, action))

    def sleep(self, seconds: float) -> None:
        seconds = max(float(seconds), 0.0)
        if seconds == 0:
            self.schedule("sleep 0", yielding=True)
        else:
            self.schedule(f"sleep {seconds:g}", enabled=_never, timeout=seconds, yielding=True)

    def choose(self, n: int, label: str) -> int:
        self._me()
        if n <= 1:
            return 0
        value = self.chooser.pick_value(n, label)
        self._record(n, value)
        self.note(f"choose {label} -> {value}")
        return value

    def effect(self, op: str, skip: int = 0) -> None:
        """A traced effect that only a thread of this run may have (a release): ``_me``'s checks, then the event
        ``note`` would add, so a thread outside the run raises instead of tracing into it."""
        me = self._me()
        loc = caller_location(2 + skip) if self.locate else ""
        self.trace.append(_event(TraceEvent, (self.steps, me.tid, op, loc, "info")))

    def note(self, op: str, skip: int = 0) -> None:
        """A traced effect that is not a scheduling point (a release, a notify)."""
        me = _state.thread
        if me is not None and me.run is self:
            loc = caller_location(2 + skip) if self.locate else ""
            self.trace.append(_event(TraceEvent, (self.steps, me.tid, op, loc, "info")))

    def crash(self, reason: str) -> None:
        me = self._me()
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
        self.trace.append(TraceEvent(self.steps, rec.tid, "begin", rec.loc, "switch"))
        rec.baton.release()  # its turn before it starts: its first acquire does not block
        rec.body()
        return rec

    def start_thread(self, thread: Any, real_start: Callable[[Any], None]) -> None:
        """Called from a controlled thread's ``Thread.start()``: the new thread joins the run."""
        rec = self._register(thread)  # reserve the logical id so the trace names it
        self.schedule(f"start T{rec.tid}")
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
            except _Abort:
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

        if id(controlled_body.__code__) not in _BOTTOM_IDS:
            thread_bottom(controlled_body)
        rec.body = controlled_body
        if target is None:
            thread.run = controlled_body
        rec.loc = _code_location(target or getattr(thread, "_target", None) or target_run) if self.locate else ""
        return rec

    def _wake_root(self, leaving: ThreadRecord) -> None:
        """``leaving`` has left a run that is being stopped: if the phase's root is parked, let it unwind. The root
        runs on the carrier, which tears the run down once the root is back, so a run that ends while its root
        waits (a failure in another thread, a deadlock) is unwound without the supervisor's help."""
        root = self._root
        if root is None or root is leaving or root.finished or not root.launched:
            return
        _release_quietly(root.baton)

    def _exit(self, rec: ThreadRecord) -> None:
        rec.finished = True
        if self.aborting:
            return
        self.trace.append(_event(TraceEvent, (self.steps, rec.tid, "exit", "", "info")))
        rec.op = "exit"
        self._step(rec, alive=False)

    # ----- the decision -----------------------------------------------------------------------------------------

    def _me(self) -> ThreadRecord:
        me = _state.thread
        if me is None or me.run is not self:
            raise RuntimeError("racecheck: a controlled object was used by a thread outside its run")
        if self.aborting:
            unwind(me)
        return me

    def recorded_steps(self) -> list[int]:
        """The step of every decision, then the run's last step (a token's step check data)."""
        return [*self.decision_steps, self.steps]

    def _record(self, n: int, value: int) -> None:
        """A value decision, as ``_step`` records a thread decision inline: its arity, choice, pick and step."""
        self.arities.append(n)
        self.choices.append(value)
        self.picked.append(VALUE_PICK)
        self.decision_steps.append(self.steps)

    def _candidates(self, me: ThreadRecord, alive: bool) -> list[ThreadRecord]:
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
        self.steps = steps = self.steps + 1
        if steps > self._max_steps:
            self._fail(
                "step-limit",
                StepLimitExceeded(f"more than {self._max_steps} scheduling steps (livelock, or raise max_steps)"),
                me,
            )
            self._stop(me, alive)
            return
        candidates = self._candidates(me, alive)
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
            index = self.chooser.pick_thread(
                [*map(_tid_of, candidates)], current_enabled, yielding, me.tid if alive else None
            )
            self.arities.append(len(candidates))
            self.choices.append(index)
            chosen = candidates[index]
            self.picked.append(chosen.tid + 1)
            self.decision_steps.append(steps)
        if self._yielders:
            self._scheduled(chosen)
        if chosen is me:
            self.trace.append(_event(TraceEvent, (steps, me.tid, me.op, me.loc, "")))
            return
        if current_enabled:
            self.preemptions += 1
            self.trace.append(_event(TraceEvent, (steps, chosen.tid, chosen.op, chosen.loc, "preempt")))
        else:
            self.trace.append(_event(TraceEvent, (steps, chosen.tid, chosen.op, chosen.loc, "switch")))
        self.current = chosen
        chosen.baton.release()
        if alive:
            me.baton.acquire()
            if self.aborting:
                unwind(me)

    def _wake_or_finish(self, me: ThreadRecord, alive: bool) -> list[ThreadRecord]:
        """Nobody can run: let virtual time pass to the next deadline, or end the run (complete, or deadlock)."""
        while self._advance_clock():
            candidates = self._candidates(me, alive)
            if candidates:
                return candidates
        unfinished = [r for r in self.threads if r.launched and not r.finished]
        root_done = self._root is None or self._root.finished
        if not unfinished or (root_done and all(r.background for r in unfinished)):
            self.done.set()  # the run is complete; background threads still parked are torn down
            self._stop(me, alive)
            return []
        self._fail("deadlock", Deadlock(self._describe_waiters(unfinished)), me)
        self._stop(me, alive)
        return []

    def _fairness(self, me: ThreadRecord, candidates: list[ThreadRecord], yielding: bool) -> list[ThreadRecord]:
        """The candidates once fair scheduling has had its say (only called while yields are in play)."""
        if yielding:
            candidates = self._yield(me, candidates)
        else:
            self._lonely_yielder = None
        if self._yielders and len(candidates) > 1:
            candidates = self._fair(candidates)
        return candidates

    def _yield(self, me: ThreadRecord, candidates: list[ThreadRecord]) -> list[ThreadRecord]:
        """CHESS fair scheduling: a yielding thread waits for someone else, so it is not scheduled again before every
        thread that could run now has run (or stopped being able to). Leaving it is therefore no preemption."""
        if len(candidates) == 1 and candidates[0] is me:
            # Only the yielder could run. Once is a poll that failed (a drain loop's last get_nowait): go on. Twice
            # in a row is a spin: in real time the threads it waits for (timed sleeps, timeouts) would wake up.
            if self._lonely_yielder is me and self._advance_clock():
                candidates = self._candidates(me, True)
            self._lonely_yielder = me
        else:
            self._lonely_yielder = None
        others = {c.tid for c in candidates if c is not me}
        if others:
            me.yield_to = others
            self._yielders.append(me)
        return candidates

    def _fair(self, candidates: list[ThreadRecord]) -> list[ThreadRecord]:
        """Drop candidates that yielded to a thread that can run now and has not run since (never all of them:
        a thread yields only while it runs, which clears it from every other's set, so the relation is acyclic)."""
        runnable = {c.tid for c in candidates}
        fair = [c for c in candidates if c.yield_to is None or runnable.isdisjoint(c.yield_to)]
        return fair or candidates

    def _scheduled(self, chosen: ThreadRecord) -> None:
        """``chosen`` runs now: whoever yielded to it has had its wish."""
        keep = []
        for rec in self._yielders:
            waits = rec.yield_to
            if waits is not None and rec is not chosen:
                waits.discard(chosen.tid)
                if waits and not rec.finished:
                    keep.append(rec)
                    continue
            rec.yield_to = None
        self._yielders = keep

    def _stop(self, me: ThreadRecord, alive: bool) -> None:
        self.aborting = True
        self.done.set()
        if alive:
            unwind(me)

    def _describe_waiters(self, unfinished: list[ThreadRecord]) -> str:
        waits = "; ".join(f"T{r.tid} waits: {r.op} @{r.loc}" for r in unfinished)
        return f"deadlock: no thread can run ({waits})"

    def _fail(self, kind: str, exc: BaseException, rec: ThreadRecord | None) -> None:
        if self.failure is None and (not self.crashed or self._recovering):
            self.failure = FailureInfo(kind, exc, None if rec is None else rec.tid)
        self.aborting = True
        self.done.set()

    # ----- supervision (runs on the explorer's own, uncontrolled thread) ---------------------------------------

    def fail_stuck(self) -> None:
        """The supervisor's verdict (see ``Watch``): the running thread is stuck in uncontrolled code."""
        rec = self.current
        self._fail("uncontrolled-blocking", UncontrolledBlocking(self._describe_stuck(rec)), rec)
        if rec is not None:
            self.leaked.append(f"T{rec.tid}")

    def _frame_of(self, rec: ThreadRecord | None) -> Any:
        """The current frame of ``rec``'s OS thread, or None; never raises. The GC is off during the read, which
        is what makes ``sys._current_frames()`` safe from gh-106883."""
        try:
            ident = None if rec is None or rec.thread is None else rec.thread.ident
            if ident is None:
                return None
            collecting = gc.isenabled()
            gc.disable()
            try:
                frame = sys._current_frames().get(ident)
            finally:
                if collecting:
                    gc.enable()
            return frame if isinstance(frame, types.FrameType) else None
        except Exception:  # noqa: BLE001 - describing a stuck thread must never crash the run
            return None

    def _current_frame_key(self, rec: ThreadRecord | None) -> tuple | None:
        frame = self._frame_of(rec)
        if frame is None:
            return None
        try:
            return (frame.f_code.co_filename, frame.f_lineno)
        except Exception:  # noqa: BLE001
            return None

    def _describe_stuck(self, rec: ThreadRecord | None) -> str:
        if rec is None:
            return "uncontrolled blocking: the run stopped making progress"
        last = f"'{rec.op}'"  # no location: a run that leaves a thread stuck shows none (see drop_locations)
        head = f"uncontrolled blocking: T{rec.tid} made no scheduling point for {self.config.watchdog:g}s"
        if self.outside:
            head = (
                f"uncontrolled blocking: T{rec.tid} waited on another process for over "
                f"{outside_limit(self.config.watchdog or 2.0):g}s in '{rec.op}' (the other side may need a "
                f"controlled thread, which cannot run while T{rec.tid} waits)"
            )
        advice = (
            "(a real lock, real sleep or I/O wait that racecheck does not control; instrument the module that owns "
            "it)"
        )
        try:
            where = self._stuck_location(self._frame_of(rec))
        except Exception:  # noqa: BLE001 - any surprise while reading frames: fall back to the scheduler's records
            where = ""
        if not where:
            return f"{head} since {last} {advice}"
        return f"{head}, stuck in {where} {advice}"

    @staticmethod
    def _stuck_location(frame: Any) -> str:
        inner = ""
        user = ""
        while frame is not None:
            here = f"{frame_path(frame)}:{frame.f_lineno} ({frame.f_code.co_name})"
            if not inner:
                inner = here
            engine = frame.f_globals.get("__racecheck_engine__") or frame.f_code.co_filename in _SKIP_FILES
            if not user and not engine:
                user = here
            frame = frame.f_back
        return inner if inner == user or not user else f"{inner}, called from {user}"

    def teardown(self) -> None:
        """Unwind every parked thread, one at a time, and wait for each OS thread to end. A thread already reported
        as left behind (stuck in uncontrolled code) is not waited for again."""
        self.aborting = True
        gone = set(self.leaked)
        for rec in self.threads:
            if rec.exited.is_set() or not rec.launched or f"T{rec.tid}" in gone:
                continue
            _release_quietly(rec.baton)
            if not rec.exited.wait(timeout=max(self.config.watchdog or 2.0, 2.0)):
                self.leaked.append(f"T{rec.tid}")
        for rec in self.threads:
            thread = rec.thread
            if rec.carried or thread is None or not rec.exited.is_set():
                continue
            if _real_is_alive(thread):
                _real_join(thread, 1.0)
        self._clean_up_after_leaks()

    def _clean_up_after_leaks(self) -> None:
        """Threads that could not be unwound never run their own cleanup: undo what the run registered for that
        case, and say so in the failure. When every thread unwound, the registrations are dropped unused."""
        pending, self.cleanups = self.cleanups, []
        if not self.leaked or (self._leaks_reported and not pending):
            return  # all unwound, or a second teardown of the same run with nothing new
        self._leaks_reported = True
        done = _cleanup.undo(pending)
        self.cleaned.extend(done)
        who = ", ".join(dict.fromkeys(self.leaked))
        what = _cleanup.describe(done)
        report = f"[{who} could not be unwound (stuck in uncontrolled code); cleaned up after it: {what}]"
        exc = self.failure.exception if self.failure is not None else None
        if isinstance(exc, RacecheckError) and report not in str(exc):
            exc.args = (f"{exc.args[0] if exc.args else ''} {report}".strip(), *exc.args[1:])
        elif exc is not None and hasattr(exc, "add_note"):
            exc.add_note(report)
        elif exc is not None:  # 3.10 has no add_note: the note goes where 3.11 keeps notes
            exc.__notes__ = [*getattr(exc, "__notes__", []), report]

    def detach(self) -> None:
        """Once every thread of the run has exited: cut the links from its threads back to it (record, body,
        chooser), so the run, its records and its trace are freed by reference counting when the explorer drops
        it. Otherwise every schedule leaves a cycle of ~100 objects behind, and the garbage collector, woken every
        few schedules, walks them (measured: a fifth of the main thread's time per schedule on the micro workload).
        What explore keeps (trace, choices, failure) stays; a thread stuck in uncontrolled code keeps its links."""
        if self.leaked:
            return
        for rec in self.threads:
            if rec.launched and not rec.exited.is_set():
                return
        for rec in self.threads:
            thread = rec.thread
            if thread is not None:
                if thread.__dict__.get("run") is rec.body:
                    del thread.run
                if getattr(thread, "_racecheck_record", None) is rec:
                    del thread._racecheck_record
            rec.body = None
            rec.run = None
            rec.thread = None
            rec.enabled = None
        self.chooser = None
        self.launch = None  # the session's carriers: a run kept in a result must not keep them

    def drop_locations(self) -> None:
        """Blank the source locations of the trace. Done to every run that left a thread stuck in uncontrolled
        code: explore runs schedules without locations and gets them by running a failing one again, which such a
        run cannot be (it would leave a second thread stuck), so its trace has none; a replay of its token, run
        with locations, drops them too, and prints the same trace."""
        self.trace = [event._replace(loc="") if event.loc else event for event in self.trace]

    def reset_for_phase(self) -> None:
        """Prepare a second phase (recovery after a crash) on the same run: same choice stream and clock."""
        self.aborting = False
        self._recovering = True
        self.done = Latch()


class Watch:
    """Tells when a phase of a run has stopped making progress: a thread stuck in uncontrolled code.

    Asked every poll interval by the supervisor (the explorer's thread) while the phase runs. Progress is read from
    the scheduler's own records (the step counter), never by polling other threads' frames: ``sys._current_frames()``
    can deadlock CPython 3.11 when it runs the GC under the runtime head lock while a thread is inside
    ``Thread.start()`` (gh-106883). Only once no step has happened for half the watchdog is the running thread's
    frame read (with the GC off), to tell a long computation that still moves from a thread blocked in one place;
    a thread still at the same place a half-watchdog later is stuck.
    """

    def __init__(self, run: Run) -> None:
        self.run = run
        self.done = run.done  # the phase watched: crash recovery starts a new one with a new latch
        self.watchdog = run.config.watchdog or 2.0
        self.last_steps = run.steps
        self.last_progress = _real_monotonic()
        self.seen: set = set()  # code locations of the running thread observed since the last step

    def stuck(self) -> bool:
        run = self.run
        now = _real_monotonic()
        if run.steps != self.last_steps:
            self.last_steps, self.last_progress = run.steps, now
            self.seen.clear()
            return False
        elapsed = now - self.last_progress
        if run.outside and elapsed < outside_limit(self.watchdog):
            return False  # waiting on another process (racecheck.control.external): progress elsewhere, within a bound
        if elapsed < self.watchdog / 2:
            return False
        where = run._current_frame_key(run.current)
        if where is not None and where not in self.seen:
            self.seen.add(where)  # it moved: a computation without scheduling points, give it more time
            self.last_progress = now
            return False
        if self.done.is_set() or run.steps != self.last_steps:
            return False
        return where is not None or elapsed >= self.watchdog


def unwind(rec: ThreadRecord) -> NoReturn:
    """Stop ``rec``'s code: its run is being stopped. ``rec.unwinding`` says it was told, so the line tracer, which
    tells a thread of a stopped run at its next line point, tells each thread once (``racecheck.control.lines``)."""
    rec.unwinding = True
    raise _Abort()


def _release_quietly(baton: Any) -> None:
    """Let a parked thread go; it may have been let go already (a leaving thread and teardown can both try)."""
    try:
        baton.release()
    except RuntimeError:
        pass


def poll_interval(watchdog: float | None) -> float | None:
    """How often the supervisor looks at a run: an eighth of the watchdog, between 10 and 250 ms (None: never)."""
    return None if watchdog is None else min(max(watchdog / 8, 0.01), 0.25)


def outside_limit(watchdog: float) -> float:
    """How long a wait on another process (racecheck.control.external) may last before it is called a hang: 15 watchdogs
    (30 s by default), so a small watchdog makes a child that never answers a short failure too."""
    return watchdog * 15


def _never() -> bool:
    return False
