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
import os
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from racecheck.control.options import ControlOptions
from racecheck.runtime import ExtensionOptions
from racecheck.runtime.records import RunConfig
from racecheck.search.data_races import MODES as DATA_RACE_MODES
from racecheck.search.options import Parts, SearchOptions
from racecheck.search.registry import DEFAULT_BOUND, DEFAULT_STRATEGY, STRATEGY_NAMES, default_of

__racecheck_engine__ = True

LOCATION_MODES = ("failures", "always")


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
    watchdog: float | None = 2.0  # real seconds without a scheduling point before "uncontrolled blocking"
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
        instrument = self.instrument
        if instrument is None:
            instrument = ()
        elif isinstance(instrument, (str, types.ModuleType)):
            instrument = (instrument,)
        else:
            instrument = tuple(instrument)
        object.__setattr__(self, "instrument", instrument)
        object.__setattr__(self, "exclude", _module_list("exclude", self.exclude))
        benign = (self.benign,) if isinstance(self.benign, str) else tuple(self.benign or ())
        if not all(isinstance(item, str) and item for item in benign):
            raise TypeError(f"benign must be patterns (non-empty strings), not {self.benign!r}")
        object.__setattr__(self, "benign", benign)
        self._validate()

    def _validate(self) -> None:
        if self.strategy not in STRATEGY_NAMES:
            raise ValueError(f"unknown strategy {self.strategy!r} (choose {', '.join(STRATEGY_NAMES)})")
        _int_at_least("schedules", self.schedules, 1)
        _int_at_least("depth", self.depth, 1)
        _int_at_least("max_steps", self.max_steps, 1)
        _int_at_least("shrink_budget", self.shrink_budget, 0)
        if not isinstance(self.seed, int) or isinstance(self.seed, bool):
            raise TypeError(f"seed must be an int, not {type(self.seed).__name__}")
        bound = self.preemption_bound
        if bound is not None and bound != math.inf and bound != "default":
            _int_at_least("preemption_bound", bound, 0)
        if self.watchdog is not None and (not isinstance(self.watchdog, (int, float)) or not self.watchdog > 0):
            raise ValueError(f"watchdog must be a positive number of seconds or None, not {self.watchdog!r}")
        if self.on_crash is not None and not callable(self.on_crash):
            raise TypeError("on_crash must be callable")
        if not isinstance(self.check_determinism, bool):
            raise TypeError("check_determinism must be True or False")
        _int_at_least("max_failures", self.max_failures, 1)
        if not isinstance(self.skip_duplicates, bool):
            raise TypeError("skip_duplicates must be True or False")
        _int_at_least("race_budget", self.race_budget, 0)
        if not isinstance(self.one_cpu, bool):
            raise TypeError("one_cpu must be True or False")
        if not isinstance(self.memory, bool):
            raise TypeError("memory must be True or False")
        if not isinstance(self.sample_memory, bool):
            raise TypeError("sample_memory must be True or False")
        if not isinstance(self.files, bool):
            raise TypeError("files must be True or False")
        if not isinstance(self.fresh_threads, bool):
            raise TypeError("fresh_threads must be True or False")
        if self.locations not in LOCATION_MODES:
            raise ValueError(f"locations must be one of {', '.join(map(repr, LOCATION_MODES))}, not {self.locations!r}")
        if not isinstance(self.atomic_races, bool):
            raise TypeError("atomic_races must be True or False")
        if self.data_races not in DATA_RACE_MODES:
            raise ValueError(
                f"data_races must be one of {', '.join(map(repr, DATA_RACE_MODES))}, not {self.data_races!r}")
        preempt = self.preempt
        if isinstance(preempt, list):
            object.__setattr__(self, "preempt", tuple(preempt))
        elif preempt is not None and preempt != "lines" and not isinstance(preempt, (tuple, types.ModuleType)):
            raise ValueError(f"preempt must be None, 'lines' or a list of modules, not {preempt!r}")
        if self.progress is not None and not callable(self.progress):
            raise TypeError(f"progress must be callable or None, not {type(self.progress).__name__}")
        if self.database is not None and not isinstance(self.database, (str, os.PathLike)):
            raise TypeError(f"database must be a folder path or None, not {type(self.database).__name__}")

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


def _int_at_least(name: str, value: Any, low: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if value < low:
        raise ValueError(f"{name} must be >= {low}, not {value}")


def _module_list(name: str, value: Any) -> tuple[Any, ...]:
    """A Config field naming modules, as a tuple: one module or dotted name, or an iterable of them."""
    if value is None:
        return ()
    items = (value,) if isinstance(value, (str, types.ModuleType)) else tuple(value)
    for item in items:
        if not isinstance(item, (str, types.ModuleType)) or item == "":
            raise TypeError(f"{name} must name modules (module objects or dotted names), not {item!r}")
    return items
