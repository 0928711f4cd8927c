"""One exploration or replay of a test function: what every schedule of it shares, and how one schedule runs.

``Session`` wires the pieces together for a test function and a Config: instrumentation of modules, line-level
preemption, the Thread patch, the carrier thread and the pool of OS threads, the registered extensions (the fake
filesystem is one), one Run per schedule. It knows no extension by name, and no strategy: it runs whatever chooser
it is given (``run_once``, ``run_batch``), and runs a schedule again from its record (``located``,
``check_determinism``).
"""

from __future__ import annotations

import gc
import sys
import types
from collections.abc import Callable
from contextlib import ExitStack, contextmanager
from typing import Any

import racecheck.control.sync_facades  # noqa: F401 - importing it registers the sync stand-ins' swaps
from racecheck import runtime
from racecheck.control import (
    autocontrol,
    external,
    instrument,
    lines,
    memory_install,
    memory_sampling,
    processes_escape,
    tempdirs,
)
from racecheck.control.memory_names import Watch, forget_local_classes
from racecheck.control.processes import install as processes
from racecheck.control.threads import controlled_thread_class
from racecheck.errors import (
    DataRaceError,
    InternalError,
    RacecheckError,
    ReplayDivergence,
    TokenError,
    UserCallbackError,
)
from racecheck.runtime.affinity import OneCpu
from racecheck.runtime.batch import Batch
from racecheck.runtime.carrier import Carrier, trace_like_a_new_thread
from racecheck.runtime.carrier_pool import CarrierPool
from racecheck.runtime.carrier_pool import supported as carrier_pool_supported
from racecheck.runtime.chooser import Chooser
from racecheck.runtime.records import FailureInfo
from racecheck.runtime.scheduler import Run
from racecheck.runtime.sinks import Sink
from racecheck.search import data_races
from racecheck.search.data_race_sink import DataRaceSink, found_races
from racecheck.search.divergence import compare_runs
from racecheck.search.interleaving_sink import InterleavingSink
from racecheck.search.options import Parts
from racecheck.search.registry import samples_memory
from racecheck.search.replay import Replayer
from racecheck.search.result import Result, outcome
from racecheck.search.shrink import normalize
from racecheck.search.tokens import Token, shape_of, short_hash
from racecheck.search.widening import Widening

__racecheck_engine__ = True

_exploring = runtime.real_allocate_lock()
STALE_RETRIES = 8  # runs of one schedule while it keeps bringing new code under watch (each brings a module more)


@contextmanager
def collections_between_runs():
    """The garbage collector runs between schedules only, never inside one (``collect_between_runs``): a collection
    runs the finalizers (``__del__``, weakref callbacks) of whatever garbage it finds, in whichever thread allocated
    last, at a moment that depends on the whole process's history; inside a run they would be steps of the code
    under test (memory accesses, even locks and files) that a replay of the same schedule would not make.

    What the process held before the exploration is frozen for its duration (``gc.freeze``, unless the program
    froze something itself): a collection between runs then scans only what the exploration made, not the ~380,000
    objects torch and Lightning leave (a full collection of those costs ~135 ms, and with memory watched the
    threshold that asks for one is passed about once every hundred schedules). Garbage made before the exploration
    is collected after it, where its finalizers could not run inside a run either."""
    enabled = gc.isenabled()
    gc.disable()
    frozen = gc.get_freeze_count() == 0
    if frozen:
        gc.freeze()
    try:
        yield
    finally:
        if frozen:
            gc.unfreeze()
        if enabled:
            gc.enable()


def collect_between_runs() -> None:
    """What the collector would have done by now, between two runs: a collection of the generations whose
    thresholds are passed (``gc.get_threshold``)."""
    counts, limits = gc.get_count(), gc.get_threshold()
    if counts[0] <= limits[0]:
        return
    generation = 0
    if counts[1] >= limits[1]:
        generation = 2 if counts[2] >= limits[2] else 1
    gc.collect(generation)


def _once(chooser: Chooser) -> Callable[[], Chooser | None]:
    """A batch's source of choosers that gives ``chooser`` once."""
    pending = [chooser]
    return lambda: pending.pop() if pending else None


def config_key(parts: Parts, extensions: Any = None) -> str:
    """What of an exploration's options changes the schedules a token's choices mean (its extensions', line points,
    memory points): a token is recorded with it, and replays only under the same."""
    extensions = runtime.extensions_for(parts.extensions) if extensions is None else extensions
    keys = [ext.config_key(parts.extensions) for ext in extensions]
    if parts.control.preempt is not None:  # line-level points change the schedule: a token must say it used them
        keys.append(f"preempt={lines.describe(parts.control.preempt)}")
    if parts.control.memory:  # so do memory points, and the warm-up run before the first schedule
        keys.append("memory")
    if parts.search.data_races == "fail":  # a data race fails the schedule: its token replays that failure
        keys.append("data-races=fail")
        if parts.search.atomic_races:  # ... and a pair of atomic additions may have been that race
            keys.append("atomic-races")
    return "|".join(keys) if keys else "-"


def _target_name(fn: Callable) -> str:
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', getattr(fn, '__name__', '?'))}"


class Session:
    """One exploration or replay of ``fn`` under ``parts`` (a ``racecheck.Config`` split by layer): what every
    schedule of it shares. Each layer it drives is handed its own part."""

    def __init__(self, fn: Callable[[], Any], parts: Parts) -> None:
        if not callable(fn):
            raise TypeError(f"racecheck needs a callable test function, not {type(fn).__name__}")
        self.fn = fn
        self.parts = parts
        self.search, self.control, self.run_config, self.world = parts
        self.carrier: Carrier | None = None  # the thread every schedule's test function runs on, while usable
        self.one_cpu = OneCpu(self.control.one_cpu)  # keeps the carrier, and so every controlled thread, on one CPU
        # the OS threads the controlled threads a root starts run on, reused from schedule to schedule
        self.carriers = CarrierPool() if not self.control.fresh_threads and carrier_pool_supported() else None
        self.extensions = runtime.extensions_for(self.world)
        self.target = _target_name(fn)
        self.config_key = config_key(parts, self.extensions)
        self.watching: Any = None  # the exploration's memory watch (its modules), once ``controlled`` began
        self.warm_modules = 0  # how many of its modules the warm-up had reached (a token names those reached later)
        # sampled watching (random, pct, pos), and how the next run watches: "whole", "learn", "sampled" or
        # "warm-up" (it learns too)
        self.sampling: memory_sampling.Sampling | None = None
        self.next_mode = "whole"
        # What else listens to every run (``racecheck.runtime.sinks``): each factory makes one sink per run, handed
        # to it beside the session's own (the data-race finder)
        self.sink_factories: list[Callable[[], Sink]] = []
        self.steps_run = 0  # scheduling steps of every run so far: what the work after a failure is measured in
        # False while runs whose data races nobody reads are made (a failure's shrink probes and swaps,
        # ``post_budget.capped``): under ``data_races="report"`` they get no data-race finder
        self.races_read = True

    def _modules(self) -> list[types.ModuleType]:
        targets: list[Any] = []
        home = sys.modules.get(getattr(self.fn, "__module__", "") or "")
        if home is not None:
            targets.append(home)
        targets.extend(self.control.instrument)
        for ext in self.extensions:
            targets.extend(ext.modules(self.world))
        excluded = autocontrol.Exclusions(self.control.exclude)  # exclude= wins, even over the test's own module
        return [module for module in instrument.resolve_modules(targets) if module.__name__ not in excluded]

    def _line_modules(self, instrumented: list[types.ModuleType]) -> list[types.ModuleType]:
        """Where line-level preemption applies: every instrumented module, or the ones ``preempt`` names."""
        preempt = self.control.preempt
        if preempt == "lines":
            return instrumented
        named = [preempt] if isinstance(preempt, types.ModuleType) else list(preempt)
        return instrument.resolve_modules(named)

    @contextmanager
    def controlled(self):
        """The setting every schedule of this session runs in: modules instrumented, line-level points traced when
        asked, threads and waits outside control patched, temporary folders tracked; undone on the way out, the
        carrier closed. One at a time per process, never inside a controlled run."""
        if runtime.current_run() is not None:
            raise RuntimeError("racecheck.explore/replay cannot be nested inside a controlled run")
        if not _exploring.acquire(False):
            raise RuntimeError("racecheck runs one exploration at a time per process (use processes for parallelism)")
        try:
            modules = self._modules()
            with ExitStack() as stack:
                # control by default first: explicitly named modules then get the swaps that stay out of library
                # code (os's facade for getpid, the builtin open as a global) on top, as they always had
                everywhere = autocontrol.install([ext.name for ext in self.extensions], self.control.exclude)
                stack.callback(everywhere.restore)
                patch = instrument.apply(modules)
                stack.callback(patch.restore)
                if self.control.preempt is not None:
                    stack.enter_context(lines.tracing(lines.files_of(self._line_modules(modules))))
                if self.control.memory:
                    roots = (self.fn, self.search.on_crash)
                    self.watching = stack.enter_context(memory_install.watching(self.control.exclude, roots))
                    self._sample(stack)
                stack.enter_context(controlled_thread_class())
                stack.enter_context(external.waiting_outside())
                stack.enter_context(processes_escape.watching())  # after external's: it wraps what that one did
                stack.enter_context(processes.joining((self.control, self.world)))  # over external's: children join
                stack.enter_context(tempdirs.tracked())
                stack.enter_context(collections_between_runs())
                stack.callback(self.one_cpu.restore)  # after the carrier is closed: threads it left keep no pin
                stack.callback(self._close_carrier)
                yield
        finally:
            _exploring.release()

    def _sample(self, stack: ExitStack) -> None:
        if self.control.sample_memory and samples_memory(self.search.strategy) and not self.search.check_determinism:
            self.sampling = sampling = memory_sampling.Sampling(self.watching)
            stack.callback(sampling.watch_all)  # before the watch gives every function its own code back

    def plan(self, index: int) -> str:
        """On the carrier, before schedule ``index`` of the loop: how it watches memory (``memory_sampling``), the
        functions' code set for it."""
        sampling = self.sampling
        if sampling is None:
            mode = "whole"
        elif memory_sampling.learns(index):
            sampling.watch_all()
            mode = "learn"
        else:
            mode = "sampled" if sampling.leave_cold() else "whole"
        self.next_mode = mode
        return mode

    def widen(self, run: Run) -> Run | None:
        """A sampled ``run`` that failed, run again with every access watched (``Widening``): that run when it
        failed, else None. Only a run watched whole has a token that replays, so a sampled run is never reported
        itself: where the widened run left the sampled run's decisions (the unwatched code did not only read what
        no other thread touches) or failed otherwise, nothing more is sampled, and the widened run's own failure,
        if it has one, is the one reported."""
        again, widening = self._again(run)
        if widening.divergence is not None or again.failure is None or (
                again.failure.signature() != run.failure.signature()):  # type: ignore[union-attr]
            self.sampling.stop()
        return again if again.failure is not None else None

    def run_once(self, chooser: Chooser, locate: bool = True, learn: bool = False) -> Run:
        """One schedule: extensions' begin hooks, the test function, end hooks, crash recovery; always torn down.
        ``locate``: give every trace event its source location (see ``Run.locate``). A run during which code came
        under memory watch (``Run.stale``) is run again with ``chooser.fresh()``, until one is not. It watches every
        access (``learn``: and lists them for sampling). ``played`` says which chooser made the run it returns."""
        return self.played(chooser, locate, learn)[0]

    def played(self, chooser: Chooser, locate: bool = True, learn: bool = False) -> tuple[Run, Chooser]:
        """``run_once``, with the chooser that made the returned run: ``chooser`` itself, or the fresh one the last
        attempt ran with (what a caller reads of it, a replay's divergence, is that run's, not a stale attempt's)."""
        if self.sampling is not None:
            self.sampling.watch_all()
        for attempt in range(STALE_RETRIES):
            self.next_mode = "warm-up" if learn else "whole"
            run = self.run_batch(_once(chooser), lambda run: False, locate)
            assert run is not None
            # the warm-up is thrown away: what it reached, it did; without memory watched no run is stale
            if not run.stale or not self.control.memory or learn or attempt == STALE_RETRIES - 1:
                break
            chooser = chooser.fresh()
        return run, chooser

    def warm_up(self) -> Run | None:
        """One run of the test before the first schedule, thrown away: what the code under test does once per
        process (loading a configuration, filling a cache, importing) happens there, and whatever it reaches comes
        under memory watch, so neither depends on which schedule of the exploration, or of a replay in a fresh
        process, happens to come first. Its token records it (the configuration key says memory). It is run once
        even when it brings code under watch (nothing of it is reported), and is the first learning run of sampled
        watching. Returns the run (None without memory watching), for an exploration to see that it hung."""
        if self.control.memory:
            run = self.run_once(Replayer((), hand_over_spins=True), locate=False, learn=True)
            self.warm_modules = len(self.watching.modules)
            return run
        return None

    def watch_modules(self, names: tuple[str, ...]) -> None:
        """After the warm-up, the modules a token says its run watched beyond it (``Token.modules``); a one-line
        TokenError for one that cannot be imported here."""
        if names and self.watching is not None:
            try:
                self.watching.bring(names)
            except ImportError as exc:
                raise TokenError(f"the token's run watched a module that cannot be imported here: {exc}") from None

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
            self.run_config.watchdog,
        )
        try:
            carrier.submit(batch.drive)
            return batch.supervise()
        except UserCallbackError:  # the user's progress callback: theirs (``run_exploration`` unwraps it)
            batch.interrupt()
            raise
        except Exception as exc:
            batch.interrupt()
            if isinstance(exc, RacecheckError) and not isinstance(exc, ReplayDivergence):
                raise
            # Nothing of the program escapes a batch (a controlled thread's exception is its run's failure): what
            # does is a bug of racecheck's own code between schedules (a strategy, a hook, the bookkeeping), or the
            # partial-order search's replay of its own prefix going astray.
            raise InternalError.of(exc) from exc
        except BaseException:
            batch.interrupt()
            raise
        finally:
            if batch.abandoned and self.carrier is carrier:
                self.carrier = None

    def _prepare(self, chooser: Chooser, locate: bool) -> Run:
        forget_local_classes()
        collect_between_runs()
        run = Run(chooser, self.run_config, self._sinks())
        run.locate = locate
        if self.control.memory:
            run.watch = Watch()
            run.watched_modules = len(self.watching.modules)
            if self.sampling is not None:
                if self.next_mode in ("learn", "warm-up"):
                    run.memory_steps.learning = []  # what its ``Learner`` sink learns from
                    if self.next_mode == "learn":  # with source lines: the data races it reports need no rerun
                        run.locate = True
                if self.next_mode == "sampled":
                    run.memory_steps.sampled = True
                    run.memory_steps.recurring = self.sampling.recurring
                if chooser.cold_codes is not None:  # a widening run: the sampled run's unwatched code
                    run.memory_steps.cold_codes = chooser.cold_codes
        if self.carriers is not None:
            run.launch = self.carriers.start
        for ext in self.extensions:
            ext.begin_run(run, self.world)
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
        if run.crashed and self.search.on_crash is not None and run.failure is None:
            run.reset_for_phase()
            trace_like_a_new_thread()
            run.play_root(self.search.on_crash, carrier.thread)
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
        self.steps_run += run.steps
        if run.leaked and run.locate:
            run.drop_locations()
        run.close_sinks()
        run.memory_steps.learning = None  # learned from (``memory_sampling.Learner``): a run kept must not hold it
        self._judge_races(run)
        chooser.end(run.ending())
        if run.failure is not None and run.failure.kind == "internal":
            raise run.failure.exception  # racecheck's own failure ends the exploration (the batch hands it over)

    def _sinks(self) -> tuple[Sink, ...]:
        """The sinks a new run is handed: what its interleaving key is read from, the data-race finder's (unless
        data races are ignored, or no one reads this run's: ``races_read``), a learning run's learner (sampled
        watching), then one of each of ``sink_factories``."""
        mode = self.search.data_races
        wanted = mode == "fail" or mode == "report" and self.races_read  # "fail": a probe's race may be its failure
        sinks: list[Sink] = [InterleavingSink()]
        if wanted:
            sinks.append(DataRaceSink(self.search.atomic_races))
        if self.control.memory and self.sampling is not None and self.next_mode in ("learn", "warm-up"):
            sinks.append(memory_sampling.Learner(self.sampling))
        sinks.extend(factory() for factory in self.sink_factories)
        return tuple(sinks)

    def _judge_races(self, run: Run) -> None:
        """Under ``data_races="fail"``, a data race of ``run`` (its sink's) not marked benign fails a run that did
        not fail otherwise, in every run of the session (a shrinking candidate, a replay) alike."""
        if self.search.data_races != "fail" or run.failure is not None:
            return
        races = found_races(run)
        if races:
            found = data_races.failing(races, self.search.benign)
            if found is not None:
                run.failure = FailureInfo("data-race", DataRaceError(data_races.describe_found(found)), found[2][0])

    def unwatched(self) -> list[str]:
        """The modules whose memory could not be watched (no Python source, or it did not compile)."""
        if self.watching is None:
            return []
        return [name for name, compiled in self.watching.modules.items() if compiled is None]

    def with_locations(self, run: Run, result: Result) -> Run | None:
        """``run`` (executed without source locations) executed again with them, for a report that names lines;
        None when it cannot be (a thread was left stuck) or did not replay."""
        if run.locate:
            return run
        if run.leaked:
            return None
        again, replayer = self._again(run)
        result.leaked_threads.extend(again.leaked)
        if replayer.divergence is not None or again.leaked or outcome(again) != outcome(run):
            return None
        return again

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
        found = compare_runs(first, second, outcome) or replayer.divergence
        for ext in self.extensions:  # what an extension saw of the world outside the run (real files) differ?
            check = getattr(ext, "compare_runs", None)
            if found is None and check is not None:
                found = check(first, second)
        return found

    def _again(self, run: Run) -> tuple[Run, Replayer]:
        """``run``'s decisions run once more (with source locations), checked step by step against its record; a
        sampled run's widened, so watching every access (``Widening``)."""
        if run.memory_steps.sampled and self.sampling is not None:
            replayer: Replayer = Widening(run.choices, run.picked, self.sampling.cold)
        else:
            replayer = Replayer(run.choices, run.picked, run.recorded_steps())
        return self.played(replayer)

    def token(self, run: Run, strategy: str, seed: int, index: int) -> str:
        """The token that replays ``run`` (its choices, trimmed, and what each decision picked and when), naming
        this test and configuration and the ``strategy``, ``seed`` and schedule ``index`` it came from."""
        choices = tuple(normalize(run.choices))
        later = self.watching.rewritten_between(self.warm_modules, run.watched_modules) if self.watching else ()
        return Token(
            strategy, seed, index, short_hash(self.target), short_hash(self.config_key), shape_of(run.arities),
            choices, tuple(run.picked), tuple(run.recorded_steps()), later,
        ).encode()
