"""One object for everything that shapes an exploration, so explore(), replay(), the CLI and the pytest plugin agree.

``explore(fn, config)`` takes a ``Config``; every field is also accepted as a keyword shortcut that overrides the
config's value (``explore(fn, strategy="dfs", schedules=50)``). A keyword that is not a field is a TypeError that
names it, so a typo never silently runs a default exploration.

``preemption_bound`` has one meaning everywhere: an int >= 0 is the bound, ``None`` (or ``math.inf``) means no bound.
Left at ``"default"``, it is the strategy's own (``racecheck.search.registry``): 2 for dfs (SCTBench: most bugs
need 1-3 preemptions), none for dpor, whose partial-order reduction makes the whole space affordable. Only dfs and
dpor use it (``Config.bound`` is what they get).

``skip_duplicates`` is on by default: random, pct and pos never run the same schedule twice and stop with
``result.exhausted`` when a small space has been run to its end (``False`` spends the whole budget on independent
samples, repeats included). ``progress`` receives a ``racecheck.search.coverage.Progress`` after every schedule, so a
front end can show schedules, interleavings and failures live without the engine knowing how.
"""

from __future__ import annotations

import dataclasses
import math
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from racecheck import config_checks
from racecheck.config_checks import LOCATION_MODES
from racecheck.control.options import ControlOptions
from racecheck.runtime import ExtensionOptions
from racecheck.runtime.records import RunConfig
from racecheck.search.options import Parts, SearchOptions
from racecheck.search.registry import DEFAULT_BOUND, DEFAULT_STRATEGY, default_of

__racecheck_engine__ = True

__all__ = ["Config", "FIELD_NAMES", "LOCATION_MODES", "check_names", "resolve"]


@dataclass(frozen=True)
class Config:
    """How to explore: strategy, budget, what to control, limits. Immutable; derive variants with ``replace``."""

    strategy: str = DEFAULT_STRATEGY  # a name of ``racecheck.search.registry``: "random", "pct", "dfs", "pos", "dpor"
    schedules: int = 1000  # at most this many schedules (dfs may stop earlier: result.exhausted)
    seed: int = 0
    instrument: tuple[Any, ...] = ()  # modules or dotted names ("pkg.*") to control besides fn's own module
    exclude: tuple[Any, ...] = ()  # modules or dotted names ("pkg.*") kept real: control by default leaves them out
    # dfs / dpor bound; None or math.inf = unbounded; "default": the strategy's (dfs 2, dpor none)
    preemption_bound: int | float | str | None = "default"
    depth: int = 3  # pct bug depth d (d-1 priority change points)
    fs: Any = None  # None, "posix", "windows" or a racecheck.fakefs.FakeFS: a fresh fake filesystem per schedule
    on_crash: Callable[[], Any] | None = None  # recovery check run after a simulated crash
    max_steps: int = 200_000  # scheduling steps per schedule before a step-limit failure (livelock); every shared
    # memory access is a step, and a Lightning Trainer.fit makes ~77,000 of them (1,400 without memory watching)
    watchdog: float | None = 2.0  # real seconds; any uncontrolled wait is a hang after 5 of them (watchdog.hang_bound)
    shrink_budget: int = 300  # replays the shrinker may spend; 0 reports the failure as found
    check_determinism: bool = False  # run every schedule twice and report the first divergence as a failure
    max_failures: int = 1  # keep exploring until this many distinct failures (result.failures) are found
    race_budget: int = 40  # replays spent naming the racing pair of each failure (failure.race); 0 skips it
    skip_duplicates: bool = True  # random/pct/pos never run a schedule twice and stop when the space is done
    preempt: Any = None  # "lines": every line of the instrumented modules is a point; or the modules to do it in
    memory: bool = True  # watch plain memory (attributes, items, globals, cells): every shared access a point
    # random/pct/pos: watch every access only in learning runs, and in the others leave unwatched the code that
    # showed no shared memory there (racecheck.control.memory_sampling); dfs/dpor always watch everything
    sample_memory: bool = True
    files: bool = True  # without fs=: every real-disk file operation of a controlled thread is a point (on the disk)
    database: Any = None  # a folder (".racecheck") keeping failing tokens per test, replayed first; None: off
    progress: Callable[[Any], Any] | None = None  # called with a coverage.Progress snapshot after every schedule
    one_cpu: bool = True  # Linux: a schedule's controlled threads share one CPU (faster handoffs; no other effect)
    fresh_threads: bool = False  # a new OS thread for every controlled thread, not a reused carrier (carrier_pool)
    locations: str = "failures"  # source lines in traces: of reported schedules only ("failures"), or "always"
    # unordered conflicting accesses (racecheck.search.data_races): "report" them in the result, "fail" the schedule
    # where one shows (as ThreadSanitizer in CI), or "ignore" them
    data_races: str = "report"
    benign: tuple[str, ...] = ()  # intended races, reported but never failing: "Type.attr", "global m.x", "f.py:12"
    # also report (and under "fail", fail on) pairs of atomic additions (two threads' list.append, set.add, ...):
    # CPython loses neither, only their order is open (docs/explore.md, "atomic additions")
    atomic_races: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "instrument", _as_tuple(self.instrument))
        object.__setattr__(self, "exclude", _as_tuple(self.exclude))
        if isinstance(self.benign, str) or self.benign is None:
            object.__setattr__(self, "benign", () if self.benign is None else (self.benign,))
        elif isinstance(self.benign, (list, tuple)):
            object.__setattr__(self, "benign", tuple(self.benign))
        if isinstance(self.preempt, list):
            object.__setattr__(self, "preempt", tuple(self.preempt))
        config_checks.check(self, FIELD_NAMES)  # every field, each refusal one line (``ConfigError``)

    @property
    def bound(self) -> int | None:
        """The preemption bound as the search uses it: an int, or None for unbounded."""
        bound = self.preemption_bound
        if bound == "default":
            bound = default_of(self.strategy, "preemption_bound", DEFAULT_BOUND)
        if bound is None or bound == math.inf:
            return None
        return int(bound)

    def parts(self) -> Parts:
        """This config split by layer (``racecheck.search.options.Parts``): what the search, the control layer,
        each run and the extensions are each told. Nothing below the api layer reads a Config."""
        return Parts(
            SearchOptions(
                strategy=self.strategy, schedules=self.schedules, seed=self.seed, bound=self.bound, depth=self.depth,
                shrink_budget=self.shrink_budget, check_determinism=self.check_determinism,
                max_failures=self.max_failures, race_budget=self.race_budget, skip_duplicates=self.skip_duplicates,
                database=self.database, progress=self.progress, locations=self.locations, data_races=self.data_races,
                benign=self.benign, atomic_races=self.atomic_races, on_crash=self.on_crash,
            ),
            ControlOptions(
                instrument=self.instrument, exclude=self.exclude, memory=self.memory, sample_memory=self.sample_memory,
                preempt=self.preempt, one_cpu=self.one_cpu, fresh_threads=self.fresh_threads,
            ),
            RunConfig(max_steps=self.max_steps, watchdog=self.watchdog),
            ExtensionOptions(fs=self.fs, files=self.files, check_determinism=self.check_determinism),
        )

    def replace(self, **changes: Any) -> Config:
        """A copy with ``changes`` applied; unknown names raise TypeError naming them."""
        check_names(changes, "Config.replace")
        return dataclasses.replace(self, **changes) if changes else self


FIELD_NAMES = tuple(f.name for f in dataclasses.fields(Config))


def check_names(shortcuts: dict[str, Any], where: str) -> None:
    """TypeError naming the first of ``shortcuts`` that is not a Config field (``where``: the function called)."""
    unknown = [name for name in shortcuts if name not in FIELD_NAMES]
    if unknown:
        raise TypeError(
            f"{where}() got an unexpected keyword argument {unknown[0]!r} (valid: {', '.join(FIELD_NAMES)})"
        )


def resolve(config: Config | None, shortcuts: dict[str, Any], where: str) -> Config:
    """The config ``explore``/``replay`` run with: ``config`` (or the defaults) overridden by keyword shortcuts."""
    if config is not None and not isinstance(config, Config):
        raise TypeError(
            f"{where}() takes a racecheck.Config as its second positional argument, not {type(config).__name__}; "
            "pass options as keywords (strategy=..., schedules=...)"
        )
    check_names(shortcuts, where)
    base = config if config is not None else Config()
    return dataclasses.replace(base, **shortcuts) if shortcuts else base


def _as_tuple(value: Any) -> Any:
    """A Config field naming modules, as a tuple: one module or dotted name, or a list of them (anything else is
    left for ``config_checks`` to refuse)."""
    if value is None:
        return ()
    if isinstance(value, (str, types.ModuleType)):
        return (value,)
    return tuple(value) if isinstance(value, (list, tuple, set, frozenset)) else value
