"""explore() and replay(): run a test function under many schedules, report the first failure with a token.

This is the only place that wires the pieces together: instrumentation of modules, the Thread patch, the strategy,
one Run per schedule, the fake filesystem when asked for, shrinking, and the Result a user sees.
"""

from __future__ import annotations

import importlib
import math
import sys
import types
from collections.abc import Callable, Iterable
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any

from racecheck import instrument as _instrument
from racecheck import runtime, sync  # noqa: F401 - sync registers the controlled stand-ins
from racecheck.errors import ReplayDivergence, TokenError
from racecheck.scheduler import FailureInfo, Run, RunConfig
from racecheck.shrink import Probe, normalize, shrink
from racecheck.strategies import STRATEGIES, Chooser, ReplayChooser, make_strategy
from racecheck.threads import controlled_thread_class
from racecheck.tokens import Token, decode, shape_of, short_hash
from racecheck.trace import TraceEvent, render

__racecheck_engine__ = True

_exploring = runtime.real_allocate_lock()


@dataclass
class Failure:
    """A failing schedule, shrunk: replay it with ``racecheck.replay(fn, failure.token)``."""

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

    @property
    def message(self) -> str:
        return f"{type(self.exception).__name__}: {self.exception}"

    def __str__(self) -> str:
        where = f" in {self.thread}" if self.thread else ""
        return (
            f"racecheck found a failing schedule (#{self.schedule_index}, {self.kind}{where}): {self.message}\n"
            f"preemptions: {self.preemptions} (before shrinking {self.original_preemptions}), steps: {self.steps}\n"
            f"replay with: racecheck.replay(fn, {self.token!r})\n{self.trace}"
        )


@dataclass
class Result:
    ok: bool
    schedules: int
    failure: Failure | None = None
    exhausted: bool = False
    strategy: str = ""
    seed: int = 0
    max_steps_seen: int = 0
    crashes: int = 0
    leaked_threads: list[str] = field(default_factory=list)

    def raise_on_failure(self) -> None:
        if self.failure is not None:
            raise AssertionError(str(self.failure)) from self.failure.exception

    def summary(self) -> str:
        if self.failure is None:
            done = " (search space exhausted)" if self.exhausted else ""
            return f"ok: {self.schedules} schedules ({self.strategy}, seed {self.seed}){done}"
        return f"FAILED after {self.schedules} schedules: {self.failure.message}; token {self.failure.token}"


# ----- setup shared by explore and replay -------------------------------------------------------------------------


def _target_name(fn: Callable) -> str:
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', getattr(fn, '__name__', '?'))}"


def _config_key(fs: Any) -> str:
    if fs is None:
        return "-"
    if isinstance(fs, str):
        return fs
    key = getattr(fs, "config_key", None)
    return key() if callable(key) else type(fs).__name__


def _modules(fn: Callable, instrument: Any, fs: Any) -> list[types.ModuleType]:
    targets: list[Any] = []
    home = sys.modules.get(getattr(fn, "__module__", "") or "")
    if home is not None:
        targets.append(home)
    if isinstance(instrument, (str, types.ModuleType)):
        instrument = (instrument,)
    targets.extend(instrument or ())
    if fs is not None:
        fakefs = importlib.import_module("racecheck.fakefs")
        for name in getattr(fakefs, "DEFAULT_MODULES", ()):
            try:
                importlib.import_module(name)
            except Exception:  # noqa: BLE001 - optional integrations (e.g. lightning) may be absent
                continue
            targets.append(name)
        fakefs.prepare()  # stand-ins for optional packages (torch), now imported, before anything is instrumented
    return _instrument.resolve_modules(targets)


@contextmanager
def _controlled(fn: Callable, instrument: Any, fs: Any):
    if runtime.current_run() is not None:
        raise RuntimeError("racecheck.explore/replay cannot be nested inside a controlled run")
    if not _exploring.acquire(False):
        raise RuntimeError("racecheck runs one exploration at a time per process (use processes for parallelism)")
    try:
        modules = _modules(fn, instrument, fs)
        with ExitStack() as stack:
            patch = _instrument.apply(modules)
            stack.callback(patch.restore)
            stack.enter_context(controlled_thread_class())
            yield
    finally:
        _exploring.release()


def _run_once(fn: Callable, chooser: Chooser, config: RunConfig, fs: Any, on_crash: Callable | None) -> Run:
    run = Run(chooser, config)
    fakefs = importlib.import_module("racecheck.fakefs") if fs is not None else None
    if fakefs is not None:
        fakefs.begin_run(run, fs)
    try:
        run.start_root(fn)
        run.supervise()
        if run.crashed:
            if fakefs is not None:
                fakefs.end_run(run, crashed=True)
            if on_crash is not None and run.failure is None:
                run.reset_for_phase()
                run.start_root(on_crash, name="racecheck-recovery")
                run.supervise()
        elif fakefs is not None:
            fakefs.end_run(run, crashed=False)
    finally:
        run.teardown()
        run.finish()
    return run


def _outcome_line(run: Run) -> str:
    failure = run.failure
    if failure is None:
        return f"-> crashed: {run.crash_reason}" if run.crashed else "-> ok"
    who = f"T{failure.tid} " if failure.tid is not None else ""
    return f"-> {who}{failure.kind}: {type(failure.exception).__name__}: {failure.exception}"


def _make_token(run: Run, strategy: str, seed: int, index: int, target: str, config: str) -> str:
    choices = tuple(normalize(run.choices))
    return Token(strategy, seed, index, short_hash(target), short_hash(config), shape_of(run.arities), choices).encode()


def _failure(run: Run, token: str, index: int, original: Run, probes: int) -> Failure:
    info: FailureInfo = run.failure  # type: ignore[assignment]
    return Failure(
        token=token,
        kind=info.kind,
        exception=info.exception,
        trace=render(run.trace, len(run.threads), _outcome_line(run)),
        events=list(run.trace),
        schedule_index=index,
        preemptions=run.preemptions,
        steps=run.steps,
        thread=None if info.tid is None else f"T{info.tid}",
        original_preemptions=original.preemptions,
        original_steps=original.steps,
        shrink_probes=probes,
    )


def _fewest_preemptions(
    fn: Callable, config: RunConfig, fs: Any, on_crash: Callable | None, signature: tuple, found: int, budget: int
) -> tuple[Probe | None, int]:
    """Greedy shrinking finds a local minimum; bounded DFS at bounds 0..found-1 finds the global one (within budget).

    Choices change meaning when an earlier one changes, so lowering choices one at a time can get stuck above the
    true minimum. Exhaustive search with an increasing preemption bound cannot: the first same-kind failure it
    meets has the fewest preemptions possible.
    """
    spent = 0
    for bound in range(found):
        search = make_strategy("dfs", 0, 1, bound)
        while spent < budget:
            chooser = search.new_execution(spent)
            if chooser is None:
                break
            spent += 1
            run = _run_once(fn, chooser, config, fs, on_crash)
            search.end_execution(chooser, run.steps)
            if run.failure is not None and run.failure.signature() == signature:
                return Probe(normalize(run.choices), (run.preemptions, run.steps), run), spent
        if spent >= budget:
            break
    return None, spent


# ----- public API -----------------------------------------------------------------------------------------------------


def explore(
    fn: Callable[[], Any],
    strategy: str = "pct",
    schedules: int = 1000,
    seed: int = 0,
    instrument: Iterable[Any] | str | types.ModuleType = (),
    preemption_bound: int | float | None = None,
    *,
    depth: int = 3,
    fs: Any = None,
    on_crash: Callable[[], Any] | None = None,
    max_steps: int = 20000,
    watchdog: float | None = 2.0,
    shrink_budget: int = 300,
) -> Result:
    """Run ``fn`` under up to ``schedules`` interleavings chosen by ``strategy``; stop at the first failure.

    strategy: "random" (uniform walk), "pct" (priority change points, ``depth``), or "dfs" (every schedule with at
    most ``preemption_bound`` preemptions, default 2; ``math.inf`` for no bound; ``result.exhausted`` says the
    search finished). ``instrument``: modules or dotted names whose threading/queue/futures/time names are
    controlled during the run (the module defining ``fn`` always is). ``fs``: "posix", "windows" or a
    ``racecheck.FakeFS`` for a fresh fake filesystem per schedule. The failure comes shrunk, with a token.
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r} (choose {', '.join(STRATEGIES)})")
    if schedules < 1:
        raise ValueError("schedules must be >= 1")
    bound: int | None
    if preemption_bound is None:
        bound = 2
    elif preemption_bound == math.inf:
        bound = None
    else:
        bound = int(preemption_bound)
    strat = make_strategy(strategy, seed, depth, bound)
    config = RunConfig(max_steps=max_steps, watchdog=watchdog)
    target, config_key = _target_name(fn), _config_key(fs)
    result = Result(ok=True, schedules=0, strategy=strategy, seed=seed)
    with _controlled(fn, instrument, fs):
        for index in range(schedules):
            chooser = strat.new_execution(index)
            if chooser is None:
                break
            run = _run_once(fn, chooser, config, fs, on_crash)
            strat.end_execution(chooser, run.steps)
            result.schedules += 1
            result.max_steps_seen = max(result.max_steps_seen, run.steps)
            result.crashes += int(run.crashed)
            result.leaked_threads.extend(run.leaked)
            if run.failure is not None:
                signature = run.failure.signature()

                def probe(choices: list[int], signature: tuple = signature) -> Probe | None:
                    candidate = _run_once(fn, ReplayChooser(choices), config, fs, on_crash)
                    result.leaked_threads.extend(candidate.leaked)
                    if candidate.failure is None or candidate.failure.signature() != signature:
                        return None
                    return Probe(normalize(candidate.choices), (candidate.preemptions, candidate.steps), candidate)

                start = Probe(normalize(run.choices), (run.preemptions, run.steps), run)
                best, probes = shrink(start, probe, budget=shrink_budget) if shrink_budget > 0 else (start, 0)
                if shrink_budget > 0 and best.key[0] > 0:
                    fewer, spent = _fewest_preemptions(fn, config, fs, on_crash, signature, best.key[0], shrink_budget)
                    probes += spent
                    if fewer is not None:
                        best, more = shrink(fewer, probe, budget=shrink_budget)
                        probes += more
                best_run: Run = best.payload
                token = _make_token(best_run, strategy, seed, index, target, config_key)
                result.ok = False
                result.failure = _failure(best_run, token, index, run, probes)
                break
        result.exhausted = strat.exhausted
    return result


def replay(
    fn: Callable[[], Any],
    token: str,
    instrument: Iterable[Any] | str | types.ModuleType = (),
    *,
    fs: Any = None,
    on_crash: Callable[[], Any] | None = None,
    max_steps: int = 20000,
    watchdog: float | None = 2.0,
) -> Result:
    """Run exactly the schedule ``token`` describes; the Result carries the same failure and the same trace."""
    parsed = decode(token)
    target, config_key = _target_name(fn), _config_key(fs)
    if parsed.target != short_hash(target):
        raise TokenError(f"token was recorded for another test function, not {target}")
    if parsed.config != short_hash(config_key):
        raise TokenError(f"token was recorded with another configuration (fs={config_key!r} does not match)")
    config = RunConfig(max_steps=max_steps, watchdog=watchdog)
    chooser = ReplayChooser(parsed.choices)
    with _controlled(fn, instrument, fs):
        run = _run_once(fn, chooser, config, fs, on_crash)
    if chooser.diverged or shape_of(run.arities) != parsed.shape:
        detail = chooser.diverged or f"it made {len(run.arities)} decisions where the token recorded {parsed.shape}"
        raise ReplayDivergence(
            f"replay diverged from the token: {detail} (nondeterminism outside racecheck's control?)"
        )
    result = Result(ok=run.failure is None, schedules=1, strategy="replay", seed=parsed.seed)
    result.max_steps_seen = run.steps
    result.crashes = int(run.crashed)
    result.leaked_threads = list(run.leaked)
    if run.failure is not None:
        result.failure = _failure(run, parsed.encode(), parsed.index, run, 0)
    result.trace = render(run.trace, len(run.threads), _outcome_line(run))  # type: ignore[attr-defined]
    return result

