"""explore() and replay(): run a test function under many schedules, report the first failure with a token.

This is the only place that wires the pieces together: the Config, instrumentation of modules, the Thread patch,
the strategy, one Run per schedule, the registered extensions (the fake filesystem is one), shrinking, the
determinism check, and the Result a user sees. It knows no extension by name.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any

from racecheck import runtime, sync  # noqa: F401 - sync registers the controlled stand-ins
from racecheck.config import Config, resolve
from racecheck.control import external as _external
from racecheck.control import instrument as _instrument
from racecheck.control import lines as _lines
from racecheck.control import tempdirs as _tempdirs
from racecheck.control.threads import controlled_thread_class
from racecheck.errors import ReplayDivergence, TokenError
from racecheck.runtime.affinity import OneCpu
from racecheck.runtime.batch import Batch
from racecheck.runtime.carrier import Carrier, trace_like_a_new_thread
from racecheck.runtime.carrier_pool import CarrierPool
from racecheck.runtime.carrier_pool import supported as carrier_pool_supported
from racecheck.runtime.scheduler import VALUE_PICK, FailureInfo, Run, RunConfig
from racecheck.runtime.trace import TraceEvent, render
from racecheck.search.coverage import ChoiceTree, Progress, Steering, exhausted_note, interleaving_key, schedule_digest
from racecheck.search.database import FailureDatabase
from racecheck.search.divergence import LIKELY_CAUSE, Replayer, compare_runs
from racecheck.search.race import WAITING, Race, find_race, same_race
from racecheck.search.shrink import Probe, fewest_preemptions, normalize, shrink
from racecheck.search.strategies import Chooser, make_strategy
from racecheck.search.tokens import Token, decode, shape_of, short_hash

__racecheck_engine__ = True

_exploring = runtime.real_allocate_lock()


@dataclass
class Failure:
    """A failing schedule, shrunk: replay it with ``racecheck.replay(fn, failure.token)``.

    ``kind``: "exception", "deadlock", "uncontrolled-blocking", "step-limit", or "nondeterminism" (with
    ``check_determinism=True``: the same schedule ran differently twice; ``exception`` is a ReplayDivergence)."""

    token: str
    kind: str
    exception: BaseException
    trace: str
    events: list[TraceEvent]
    schedule_index: int
    preemptions: int
    steps: int
    thread: str | None
    original_preemptions: int
    original_steps: int
    shrink_probes: int = 0
    race: Race | None = None  # the two conflicting operations whose order decides this failure, when found
    occurrences: int = 1  # failing schedules explored that were this same failure (with max_failures > 1)
    signature: tuple = ()  # what groups failures: kind, exception type, where raised
    # what racecheck removed after threads it could not unwind: {"kind", "path", "outcome"} each (the message
    # only counts them by kind, so that it reads the same in every replay)
    cleanup: list[dict] = field(default_factory=list)

    @property
    def message(self) -> str:
        return f"{type(self.exception).__name__}: {self.exception}"

    def __str__(self) -> str:
        where = f" in {self.thread}" if self.thread else ""
        race = f"{self.race}\n" if self.race is not None else ""
        return race + (
            f"racecheck found a failing schedule (#{self.schedule_index}, {self.kind}{where}): {self.message}\n"
            f"preemptions: {self.preemptions} (before shrinking {self.original_preemptions}), steps: {self.steps}\n"
            f"replay with: racecheck.replay(fn, {self.token!r})\n{self.trace}"
        )


@dataclass
class Result:
    """What explore() and replay() return. ``trace``: the rendered trace of the failing schedule (explore) or of
    the replayed one (replay, failing or not); empty when explore found nothing."""

    ok: bool
    schedules: int
    failure: Failure | None = None
    exhausted: bool = False
    strategy: str = ""
    seed: int = 0
    max_steps_seen: int = 0
    crashes: int = 0
    leaked_threads: list[str] = field(default_factory=list)
    trace: str = ""
    config: Config | None = None
    failures: list[Failure] = field(default_factory=list)  # every distinct failure found, first one first
    interleavings: int = 0  # distinct interleavings explored (by the order of conflicting operations)
    distinct: int = 0  # distinct schedules (exact choice sequences) explored; with ``exhausted``: the whole space
    replayed: int = 0  # schedules replayed first from the failure database (counted in ``schedules`` too)

    def raise_on_failure(self) -> None:
        if self.failure is not None:
            raise AssertionError(str(self.failure)) from self.failure.exception

    @property
    def exhausted_note(self) -> str:
        """``exhausted: all N distinct schedules explored`` when the space was run to its end, else ''."""
        if not self.exhausted:
            return ""
        bound = self.config.bound if self.config is not None else None
        return exhausted_note(self.distinct, self.strategy, bound)

    def summary(self) -> str:
        if self.failure is None:
            done = f"; {self.exhausted_note}" if self.exhausted else ""
            return (
                f"ok: {self.schedules} schedules, {self.interleavings} interleavings ({self.strategy}, seed "
                f"{self.seed}){done}"
            )
        more = f" (and {len(self.failures) - 1} more distinct failures)" if len(self.failures) > 1 else ""
        return (
            f"FAILED after {self.schedules} schedules: {self.failure.message}; token {self.failure.token}{more}"
        )


# ----- setup shared by explore and replay -------------------------------------------------------------------------


def _target_name(fn: Callable) -> str:
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', getattr(fn, '__name__', '?'))}"


class _Session:
    """One exploration or replay of ``fn`` under ``config``: what every schedule of it shares."""

    def __init__(self, fn: Callable[[], Any], config: Config) -> None:
        if not callable(fn):
            raise TypeError(f"racecheck needs a callable test function, not {type(fn).__name__}")
        self.fn = fn
        self.config = config
        self.run_config = RunConfig(max_steps=config.max_steps, watchdog=config.watchdog)
        self.carrier: Carrier | None = None  # the thread every schedule's test function runs on, while usable
        self.one_cpu = OneCpu(config.one_cpu)  # keeps the carrier, and so every controlled thread, on one CPU
        # the OS threads the controlled threads a root starts run on, reused from schedule to schedule
        self.carriers = CarrierPool() if not config.fresh_threads and carrier_pool_supported() else None
        self.extensions = runtime.extensions_for(config)
        self.target = _target_name(fn)
        keys = [ext.config_key(config) for ext in self.extensions]
        if config.preempt is not None:  # line-level points change the schedule: a token must say it used them
            keys.append(f"preempt={_lines.describe(config.preempt)}")
        self.config_key = "|".join(keys) if keys else "-"

    def _modules(self) -> list[types.ModuleType]:
        targets: list[Any] = []
        home = sys.modules.get(getattr(self.fn, "__module__", "") or "")
        if home is not None:
            targets.append(home)
        targets.extend(self.config.instrument)
        for ext in self.extensions:
            targets.extend(ext.modules(self.config))
        return _instrument.resolve_modules(targets)

    def _line_modules(self, instrumented: list[types.ModuleType]) -> list[types.ModuleType]:
        """Where line-level preemption applies: every instrumented module, or the ones ``preempt`` names."""
        preempt = self.config.preempt
        if preempt == "lines":
            return instrumented
        named = [preempt] if isinstance(preempt, types.ModuleType) else list(preempt)
        return _instrument.resolve_modules(named)

    @contextmanager
    def controlled(self):
        if runtime.current_run() is not None:
            raise RuntimeError("racecheck.explore/replay cannot be nested inside a controlled run")
        if not _exploring.acquire(False):
            raise RuntimeError("racecheck runs one exploration at a time per process (use processes for parallelism)")
        try:
            modules = self._modules()
            with ExitStack() as stack:
                patch = _instrument.apply(modules)
                stack.callback(patch.restore)
                if self.config.preempt is not None:
                    stack.enter_context(_lines.tracing(_lines.files_of(self._line_modules(modules))))
                stack.enter_context(controlled_thread_class())
                stack.enter_context(_external.waiting_outside())
                stack.enter_context(_tempdirs.tracked())
                stack.callback(self.one_cpu.restore)  # after the carrier is closed: threads it left keep no pin
                stack.callback(self._close_carrier)
                yield
        finally:
            _exploring.release()

    def run_once(self, chooser: Chooser, locate: bool = True) -> Run:
        """One schedule: extensions' begin hooks, the test function, end hooks, crash recovery; always torn down.
        ``locate``: give every trace event its source location (see ``Run.locate``)."""
        pending = [chooser]
        run = self.run_batch(lambda: pending.pop() if pending else None, lambda run: False, locate)
        assert run is not None
        return run

    def run_batch(
        self, next_chooser: Callable[[], Chooser | None], after: Callable[[Run], bool], locate: bool
    ) -> Run | None:
        """Schedules back to back on the carrier (``runtime.batch``), while this thread supervises: each gets its
        chooser from ``next_chooser`` (None: no more), and ``after`` (on the carrier) accounts for each run that
        ended normally and says whether to go on. Returns the run the batch ended with: the one ``after`` declined,
        the one the supervisor took over (stuck in uncontrolled code; ``after`` never saw it), or the last one
        ``after`` accepted when the batch ran out of choosers or reached its size; None if none was run."""
        if self.carrier is None or not self.carrier.usable:
            self.carrier = Carrier()
        carrier = self.carrier
        self.one_cpu.place(carrier.thread)
        if self.carriers is not None:
            self.carriers.place(self.one_cpu.follow)
        batch = Batch(
            carrier,
            lambda run, claim: self._play(run, carrier, claim),
            next_chooser,
            lambda chooser: self._prepare(chooser, locate),
            self._finish,
            after,
            self.config.watchdog,
        )
        try:
            carrier.submit(batch.drive)
            return batch.supervise()
        except BaseException:
            batch.interrupt()
            raise
        finally:
            if batch.abandoned and self.carrier is carrier:
                self.carrier = None

    def _prepare(self, chooser: Chooser, locate: bool) -> Run:
        run = Run(chooser, self.run_config)
        run.locate = locate
        if self.carriers is not None:
            run.launch = self.carriers.start
        if isinstance(chooser, Replayer):
            chooser.run = run
        for ext in self.extensions:
            ext.begin_run(run, self.config)
        return run

    def _play(self, run: Run, carrier: Carrier, claim: Callable[[Any], bool]) -> bool:
        """On the carrier: the test function as the root thread, end hooks, then crash recovery if it crashed.
        False when the supervisor took a phase over (it finishes the run then)."""
        trace_like_a_new_thread()
        run.play_root(self.fn, carrier.thread)
        run.done.wait()
        if not claim(run.done):
            return False
        run.teardown()
        for ext in self.extensions:
            ext.end_run(run, run.crashed)
        if run.crashed and self.config.on_crash is not None and run.failure is None:
            run.reset_for_phase()
            trace_like_a_new_thread()
            run.play_root(self.config.on_crash, carrier.thread)
            run.done.wait()
            if not claim(run.done):
                return False
            run.teardown()
        return True

    def _finish(self, run: Run, chooser: Chooser, taken_over: bool) -> None:
        """The end of every run, once its last phase is torn down: normally (on the carrier), or taken over by the
        supervisor (on this thread, after it unwound what it could; the end hooks of the first phase have not run
        then)."""
        if taken_over and not run.recovering:
            for ext in self.extensions:
                ext.end_run(run, run.crashed)
        run.detach()
        if run.leaked and run.locate:
            run.drop_locations()
        if isinstance(chooser, Replayer):
            chooser.finish()

    def _close_carrier(self) -> None:
        carrier, self.carrier = self.carrier, None
        if carrier is not None:
            carrier.close()
        if self.carriers is not None:
            self.carriers.close()

    def located(self, run: Run, result: Result) -> Run:
        """A failing ``run`` that was executed without source locations, executed again with them (the same
        decisions replay the same execution); the original when it cannot be or did not replay (then its report
        has no locations). A run that left a thread stuck in uncontrolled code is never run twice: its trace has no
        locations however it was run (``Run.drop_locations``), so a replay of its token prints the same."""
        if run.locate or run.leaked or run.failure is None:
            return run
        again, replayer = self._again(run)
        result.leaked_threads.extend(again.leaked)
        same = (
            replayer.divergence is None and again.failure is not None and not again.leaked
            and again.failure.signature() == run.failure.signature()
        )
        return again if same else run

    def check_determinism(self, first: Run) -> str | None:
        """Run the decisions of ``first`` again; None if it did exactly the same, else where it went elsewhere."""
        second, replayer = self._again(first)
        return compare_runs(first, second, _outcome) or replayer.divergence

    def _again(self, run: Run) -> tuple[Run, Replayer]:
        """``run``'s decisions run once more (with source locations), checked step by step against its record."""
        replayer = Replayer(run.choices, run.picked, run.recorded_steps())
        return self.run_once(replayer), replayer

    def token(self, run: Run, strategy: str, seed: int, index: int) -> str:
        choices = tuple(normalize(run.choices))
        return Token(
            strategy, seed, index, short_hash(self.target), short_hash(self.config_key), shape_of(run.arities),
            choices, tuple(run.picked), tuple(run.recorded_steps()),
        ).encode()


def _outcome(run: Run) -> tuple:
    """How a run ended, comparably across reruns: the rendered kind plus the failure's signature."""
    failure = run.failure
    if failure is None:
        return ("a crash" if run.crashed else "passing", run.crashed)
    return (f"{failure.kind} ({type(failure.exception).__name__})", failure.signature(), failure.tid)


def _outcome_line(run: Run) -> str:
    failure = run.failure
    if failure is None:
        return f"-> crashed: {run.crash_reason}" if run.crashed else "-> ok"
    who = f"T{failure.tid} " if failure.tid is not None else ""
    return f"-> {who}{failure.kind}: {type(failure.exception).__name__}: {failure.exception}"


def _render(run: Run) -> str:
    return render(run.trace, len(run.threads), _outcome_line(run))


def _failure(run: Run, token: str, index: int, original: Run, probes: int, info: FailureInfo | None = None) -> Failure:
    info = info or run.failure
    assert info is not None
    return Failure(
        token=token,
        kind=info.kind,
        exception=info.exception,
        trace=_render(run),
        events=list(run.trace),
        schedule_index=index,
        preemptions=run.preemptions,
        steps=run.steps,
        thread=None if info.tid is None else f"T{info.tid}",
        original_preemptions=original.preemptions,
        original_steps=original.steps,
        shrink_probes=probes,
        cleanup=[item.to_dict() for item in run.cleaned],
    )


def _fewest_preemptions(session: _Session, signature: tuple, found: int, budget: int) -> tuple[Probe | None, int]:
    """The exhaustive pass of the shrinker (``shrink.fewest_preemptions``) over real runs of this session."""

    def execute(chooser: Chooser) -> Probe | None:
        run = session.run_once(chooser)
        if run.failure is not None and run.failure.signature() == signature:
            return Probe(normalize(run.choices), (run.preemptions, run.steps), run)
        return None

    return fewest_preemptions(execute, found, budget)


def _shrunk(session: _Session, run: Run, result: Result) -> tuple[Run, int]:
    """The simplest run that fails the same way as ``run`` (fewest preemptions, then fewest steps)."""
    budget = session.config.shrink_budget
    start = Probe(normalize(run.choices), (run.preemptions, run.steps), run)
    if budget <= 0:
        return run, 0
    signature = run.failure.signature()  # type: ignore[union-attr]

    def probe(choices: list[int]) -> Probe | None:
        replayer = Replayer(choices)
        candidate = session.run_once(replayer)
        result.leaked_threads.extend(candidate.leaked)
        if candidate.failure is None or candidate.failure.signature() != signature:
            return None
        key = (candidate.preemptions, candidate.steps)
        return Probe(normalize(candidate.choices), key, candidate)

    best, probes = shrink(start, probe, budget=budget)
    if best.key[0] > 0:
        fewer, spent = _fewest_preemptions(session, signature, best.key[0], budget)
        probes += spent
        if fewer is not None:
            best, more = shrink(fewer, probe, budget=budget)
            probes += more
    return best.payload, probes


def _racing_pair(session: _Session, run: Run, result: Result) -> Race | None:
    """``race.find_race`` over real runs of this session: swap conflicting pairs of the shrunk schedule."""
    budget = session.config.race_budget
    if budget <= 0 or run.failure is None:
        return None
    signature = run.failure.signature()
    values = [c for c, p in zip(run.choices, run.picked, strict=False) if p == VALUE_PICK]

    def execute(chooser: Chooser) -> Run:
        swapped = session.run_once(chooser)
        result.leaked_threads.extend(swapped.leaked)
        return swapped

    def token_of(other: Run) -> str:
        cfg = session.config
        return session.token(other, cfg.strategy, cfg.seed, 0)

    def fails_same(other: Run) -> bool:
        return other.failure is not None and other.failure.signature() == signature

    def describe(other: Run) -> str:
        return "passes" if other.failure is None else _outcome_line(other)[3:]

    events = list(run.trace)
    if run.failure.kind == "deadlock":
        events += [
            TraceEvent(run.steps + 1, rec.tid, rec.op, rec.loc, WAITING)
            for rec in run.threads
            if rec.launched and rec.op != "exit"  # torn down since, but still showing what it waited for
        ]
    race, _spent = find_race(events, values, execute, fails_same, describe, budget, token_of)
    return race


def _collect(
    session: _Session, run: Run, index: int, result: Result, origin: tuple[str, int] | None = None
) -> bool:
    """A failing schedule: a new distinct failure is shrunk, given its racing pair and token, and kept; another
    instance of a known one is counted. True when exploration should stop (``max_failures`` distinct found)."""
    cfg = session.config
    signature = run.failure.signature()  # type: ignore[union-attr]
    known = [f for f in result.failures if f.signature == signature]
    for failure in known:
        if failure.race is None or same_race(failure.race, run.trace):
            failure.occurrences += 1
            return False
    best, probes = _shrunk(session, run, result)
    strategy, seed = origin or (cfg.strategy, cfg.seed)
    token = session.token(best, strategy, seed, index)
    failure = _failure(best, token, index, run, probes)
    failure.signature = signature
    failure.race = _racing_pair(session, best, result)
    for other in known:
        if other.race is not None and failure.race is not None and other.race.key() == failure.race.key():
            other.occurrences += 1
            return False
    result.failures.append(failure)
    if result.failure is None:
        result.failure = failure
    return len(result.failures) >= cfg.max_failures


def _replay_database(
    session: _Session, database: FailureDatabase, key: str, result: Result, coverage: _Coverage
) -> bool:
    """Run the schedules that failed before, first; a kept token that no longer fails (or no longer fits the
    test) is dropped. True when they alone found ``max_failures`` distinct failures."""
    for text in database.fetch(key):
        try:
            parsed = decode(text)
        except TokenError:
            database.delete(key, text)
            continue
        if parsed.target != short_hash(session.target) or parsed.config != short_hash(session.config_key):
            continue  # another test or configuration sharing the key digest: leave it alone
        replayer = Replayer(parsed.choices, parsed.picked, parsed.steps)
        run = session.run_once(replayer)
        result.replayed += 1
        result.leaked_threads.extend(run.leaked)
        if run.failure is None or replayer.divergence is not None:
            database.delete(key, text)
            coverage.count(run, -1, result)
            continue
        stop = _collect(session, run, parsed.index, result, (parsed.strategy, parsed.seed))
        coverage.count(run, -1, result)
        if stop:
            return True
    return False


class _Coverage:
    """What an exploration has covered so far: distinct schedules (a ``ChoiceTree``), distinct interleavings,
    and the ``progress`` callback that is told after every schedule."""

    # Traces whose interleaving keys are not computed yet, at most this many (or this many events) at a time.
    _PENDING_RUNS = 64
    _PENDING_EVENTS = 1 << 14

    def __init__(self, config: Config) -> None:
        self.config = config
        # dfs never repeats itself and knows when it is done; the sampling strategies learn it from the tree
        self.tree = ChoiceTree() if config.strategy != "dfs" else None
        self.steering = self.tree is not None and config.skip_duplicates
        self.keys: set[str] = set()
        self._pending: list[list] = []  # traces of counted schedules whose keys ``settle`` has yet to add
        self._pending_events = 0

    def chooser(self, inner: Chooser) -> Chooser:
        return Steering(inner, self.tree) if self.steering and self.tree is not None else inner

    @property
    def exhausted(self) -> bool:
        """Every schedule of the space has run (only claimed when duplicates are skipped: with independent
        samples the budget is spent as asked)."""
        return self.steering and self.tree is not None and self.tree.complete

    def count(self, run: Run, index: int, result: Result, done: bool = False) -> None:
        """Account for one finished schedule in ``result`` and tell the progress callback (``done``: the strategy
        itself knows the space is finished, as dfs does).

        Without a progress callback, nothing reads the interleaving count before the exploration ends, so keys are
        computed in batches (``settle``): run between schedules, the key's code and data are evicted by the
        workload each time and it took 2.5x as long as in a loop over many traces (measured on the micro
        workload: 91 against 35 µs)."""
        if self.config.progress is not None:
            key = interleaving_key(run.trace)
            self.keys.add(key)
            result.interleavings = len(self.keys)
        else:
            self._pending.append(run.trace)
            self._pending_events += len(run.trace)
            if len(self._pending) >= self._PENDING_RUNS or self._pending_events >= self._PENDING_EVENTS:
                self.settle(result)
        if self.tree is not None:
            self.tree.add(run.choices, run.arities)
            result.distinct = self.tree.distinct
        else:
            result.distinct += 1
        result.schedules += 1
        result.max_steps_seen = max(result.max_steps_seen, run.steps)
        result.crashes += int(run.crashed)
        if self.config.progress is not None:
            self.config.progress(Progress(
                schedules=result.schedules, requested=self.config.schedules, interleavings=result.interleavings,
                distinct=result.distinct, failures=len(result.failures), exhausted=done or self.exhausted, index=index,
                interleaving=key, schedule=schedule_digest(run.choices), failed=run.failure is not None,
            ))

    def settle(self, result: Result) -> None:
        """Add the keys of the schedules counted since the last call: ``result.interleavings`` is exact after it."""
        pending, self._pending, self._pending_events = self._pending, [], 0
        keys = self.keys
        for trace in pending:
            keys.add(interleaving_key(trace))
        result.interleavings = len(keys)


class _Schedules:
    """explore's main loop: schedule after schedule of the strategy, until the budget, the space or a stop.

    Runs in batches on the carrier (``_Session.run_batch``): ``next_chooser`` and ``after`` run there, and a run
    that passed is accounted for there too, without waking this thread. A failing run, or every run under
    ``check_determinism``, needs more runs (shrinking, a second execution), which only this thread may start: it
    ends the batch and is handled by ``_settle`` here, as is a run the supervisor took over."""

    def __init__(self, session: _Session, strat: Any, coverage: _Coverage, result: Result) -> None:
        self.session = session
        self.config = session.config
        self.strat = strat
        self.coverage = coverage
        self.result = result
        self.index = 0
        self.chooser: Chooser | None = None
        self.counted: Run | None = None  # the last run ``after`` accounted for

    def run(self, locate: bool) -> None:
        while not self._finished():  # known here, a batch that would find nothing to run is not started
            run = self.session.run_batch(self.next_chooser, self.after, locate)
            if run is None:
                return
            if run is not self.counted and self._settle(run):
                return

    def _finished(self) -> bool:
        """The budget is spent or the space is run to its end (a batch ends at its size limit or at a failing
        run, so the last one's end did not say which; starting another only to hear it was one more hand-over to
        the carrier and back, measured at ~0.1 ms per exploration)."""
        return self.index >= self.config.schedules or self.coverage.exhausted or self.strat.exhausted

    def next_chooser(self) -> Chooser | None:
        if self._finished():
            return None
        chooser = self.strat.new_execution(self.index)
        if chooser is None:
            return None
        self.chooser = chooser
        return self.coverage.chooser(chooser)

    def after(self, run: Run) -> bool:
        """On the carrier: account for a run that needs nothing more; False hands it to ``_settle``."""
        if run.failure is not None or self.config.check_determinism:
            return False
        self.strat.end_execution(self.chooser, run.steps)
        self.result.leaked_threads.extend(run.leaked)
        self.coverage.count(run, self.index, self.result, self.strat.exhausted)
        self.index += 1
        self.counted = run
        return True

    def _settle(self, run: Run) -> bool:
        """A run that needs this thread: check determinism, collect a failure, count it. True: stop exploring."""
        session, cfg, result, index = self.session, self.config, self.result, self.index
        self.strat.end_execution(self.chooser, run.steps)
        result.leaked_threads.extend(run.leaked)
        stop = False
        if cfg.check_determinism:
            divergence = session.check_determinism(run)
            if divergence is not None:
                token = session.token(run, cfg.strategy, cfg.seed, index)
                info = FailureInfo("nondeterminism", ReplayDivergence(divergence), None)
                result.failure = _failure(run, token, index, run, 0, info)
                result.failures.append(result.failure)
                stop = True
        if not stop and run.failure is not None:
            run = session.located(run, result)
            stop = _collect(session, run, index, result)
        self.coverage.count(run, index, result, self.strat.exhausted)
        self.index += 1
        return stop


# ----- public API -----------------------------------------------------------------------------------------------------


def explore(fn: Callable[[], Any], config: Config | None = None, **shortcuts: Any) -> Result:
    """Run ``fn`` under up to ``schedules`` interleavings chosen by ``strategy``; stop at the first failure.

    ``config`` is a ``racecheck.Config``; every Config field is also a keyword shortcut that overrides it
    (``explore(fn, strategy="dfs", preemption_bound=1)``); any other keyword is a TypeError naming it.
    strategy: "random" (uniform walk), "pct" (priority change points, ``depth``), or "dfs" (every schedule with at
    most ``preemption_bound`` preemptions, default 2; None or ``math.inf`` for no bound; ``result.exhausted`` says
    the search finished). ``instrument``: modules or dotted names whose threading/queue/futures/time names are
    controlled during the run (the module defining ``fn`` always is). ``fs``: "posix", "windows" or a
    ``racecheck.fakefs.FakeFS`` for a fresh fake filesystem per schedule. ``check_determinism``: run every schedule
    twice and report a difference as a failure of kind "nondeterminism". The failure comes shrunk, with a token.
    """
    cfg = resolve(config, shortcuts, "explore")
    session = _Session(fn, cfg)
    strat = make_strategy(cfg.strategy, cfg.seed, cfg.depth, cfg.bound)
    result = Result(ok=True, schedules=0, strategy=cfg.strategy, seed=cfg.seed, config=cfg)
    coverage = _Coverage(cfg)
    database = FailureDatabase(cfg.database) if cfg.database is not None else None
    db_key = f"{session.target}|{session.config_key}"
    # Source locations cost a stack walk at every point: computed for every schedule only when asked, or when
    # schedules are compared event by event (check_determinism); otherwise a failing one is run again with them.
    locate_all = cfg.locations == "always" or cfg.check_determinism
    with session.controlled():
        stop = database is not None and _replay_database(session, database, db_key, result, coverage)
        if not stop:
            _Schedules(session, strat, coverage, result).run(locate_all)
        result.exhausted = strat.exhausted or coverage.exhausted
        coverage.settle(result)
    if database is not None:
        for failure in result.failures:
            database.save(db_key, failure.token)
    if result.failure is not None:
        result.ok = False
        result.trace = result.failure.trace
    return result


def replay(fn: Callable[[], Any], token: str, config: Config | None = None, **shortcuts: Any) -> Result:
    """Run exactly the schedule ``token`` describes; the Result carries the same failure and the same trace.

    Options as for ``explore`` (only instrument, fs, on_crash, max_steps, watchdog and check_determinism matter
    here: the schedule comes from the token). Raises TokenError for a malformed, edited or foreign token and
    ReplayDivergence when the code under test does not follow the schedule (saying where)."""
    cfg = resolve(config, shortcuts, "replay")
    parsed = decode(token)
    session = _Session(fn, cfg)
    if parsed.target != short_hash(session.target):
        raise TokenError(f"token was recorded for another test function, not {session.target}")
    if parsed.config != short_hash(session.config_key):
        raise TokenError(f"token was recorded with another configuration ({session.config_key!r} does not match)")
    with session.controlled():
        replayer = Replayer(parsed.choices, parsed.picked, parsed.steps)
        run = session.run_once(replayer)
        divergence = replayer.divergence
        if divergence is None and shape_of(run.arities) != parsed.shape:
            divergence = (
                f"replay diverged from the token: the same threads ran at the same steps, but other threads could "
                f"run at some decisions than when it was recorded. Likely cause: {LIKELY_CAUSE}"
            )
        if divergence is None and cfg.check_determinism:
            divergence = session.check_determinism(run)
    if divergence is not None:
        raise ReplayDivergence(divergence)
    result = Result(ok=run.failure is None, schedules=1, strategy="replay", seed=parsed.seed, config=cfg,
                    interleavings=1, distinct=1)
    result.max_steps_seen = run.steps
    result.crashes = int(run.crashed)
    result.leaked_threads = list(run.leaked)
    if run.failure is not None:
        result.failure = _failure(run, parsed.encode(), parsed.index, run, 0)
        result.failure.signature = run.failure.signature()
        result.failures.append(result.failure)
    result.trace = _render(run)
    return result
