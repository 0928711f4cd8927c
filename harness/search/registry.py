"""The one table of exploration strategies: their names, what each is for, and where each is built.

Config validates against it, the CLI and the pytest plugin offer its names, the gate accepts them, and ``build``
makes a strategy from it (``make_strategy`` is the same with Config's options by position). It imports nothing of
racecheck and loads a strategy's module only when one is built, so a front end can list the names without loading
the engine.

Three things differ per strategy and are read from here, never from a strategy's name:

* ``systematic``: the strategy enumerates its space itself (dfs, dpor). It never repeats a schedule and knows when
  it is done, so it runs without the coverage layer's duplicate steering, and ``--jobs``/``--tx`` run a cell of it
  as one unit in one process (its next schedule depends on every earlier one: the space cannot be cut by seeds).
* ``reduces``: the strategy explores one schedule per class of equivalent interleavings (dpor), so when it is
  done, reports say every class was explored rather than every schedule.
* ``defaults``: an option whose default is the strategy's own. ``Config.preemption_bound`` is ``"default"`` unless
  set, which means 2 for dfs (and the strategies that do not read it) and no bound for dpor, whose reduction makes
  the whole space affordable where dfs needs a bound.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class StrategyEntry:
    """A registered strategy: ``module:factory`` is called with the keyword options its ``options`` name."""

    name: str
    module: str
    factory: str
    options: tuple[str, ...]
    summary: str
    systematic: bool = False  # enumerates its space: no duplicate steering, one unit under --jobs (see above)
    defaults: tuple[tuple[str, Any], ...] = ()  # (option, value) where the strategy's default is its own
    # samples schedules independently, so its runs may watch memory sampled (``racecheck.control.memory_sampling``):
    # a systematic strategy's next schedule depends on what each one touched, so it watches every access
    samples_memory: bool = False
    reduces: bool = False  # one schedule per class of equivalent interleavings: its end covers classes (see above)


ENTRIES: tuple[StrategyEntry, ...] = (
    StrategyEntry("random", "racecheck.search.random_walk", "RandomWalk", (),
                  "uniform choice among the runnable threads where a switch can matter", samples_memory=True),
    StrategyEntry("pct", "racecheck.search.pct", "PCT", ("depth",),
                  "probabilistic concurrency testing: random priorities, depth-1 change points", samples_memory=True),
    StrategyEntry("dfs", "racecheck.search.dfs", "BoundedDFS", ("preemption_bound",),
                  "exhaustive depth-first search within a preemption bound", systematic=True),
    StrategyEntry("pos", "racecheck.search.pos", "POS", (),
                  "partial order sampling: random priorities reset on conflicting accesses", samples_memory=True),
    StrategyEntry("dpor", "racecheck.search.dpor", "DPOR", ("preemption_bound",),
                  "partial-order reduction: one schedule per class of equivalent interleavings, no bound",
                  systematic=True, reduces=True, defaults=(("preemption_bound", None),)),
)

DEFAULT_STRATEGY = "pct"  # what an exploration uses when none is named: Config, the CLI and the plugin read it here
DEFAULT_BOUND = 2  # Config.preemption_bound="default" for a strategy without a default of its own

BY_NAME: dict[str, StrategyEntry] = {entry.name: entry for entry in ENTRIES}
STRATEGY_NAMES: tuple[str, ...] = tuple(BY_NAME)


def entry(name: str) -> StrategyEntry:
    """The registered strategy ``name``; ValueError naming the choices otherwise."""
    try:
        return BY_NAME[name]
    except KeyError:
        raise ValueError(f"unknown strategy {name!r} (choose {', '.join(STRATEGY_NAMES)})") from None


def build(name: str, seed: int, **options: Any) -> Any:
    """A new strategy object ``name`` seeded with ``seed``; options it does not take are ignored, so a caller can
    pass every option Config has (depth, preemption_bound) whatever the strategy."""
    found = entry(name)
    factory = getattr(importlib.import_module(found.module), found.factory)
    return factory(seed, **{key: options[key] for key in found.options if key in options})


def default_of(name: str, option: str, fallback: Any) -> Any:
    """Strategy ``name``'s own default for ``option`` (``fallback`` when it has none)."""
    return dict(entry(name).defaults).get(option, fallback)


def is_systematic(name: str) -> bool:
    """Whether strategy ``name`` enumerates its space itself (see the module docstring); False for a name that
    is not a strategy (a replay)."""
    found = BY_NAME.get(name)
    return found is not None and found.systematic


def reduces(name: str) -> bool:
    """Whether strategy ``name`` explores one schedule per class of equivalent interleavings (see the module
    docstring); False for a name that is not a strategy (a replay)."""
    found = BY_NAME.get(name)
    return found is not None and found.reduces


def samples_memory(name: str) -> bool:
    """Whether strategy ``name`` may watch memory sampled (see ``StrategyEntry.samples_memory``)."""
    found = BY_NAME.get(name)
    return found is not None and found.samples_memory


def make_strategy(name: str, seed: int, depth: int, preemption_bound: int | None) -> Any:
    """The strategy ``name`` as ``build`` makes it, with Config's options by position (what an exploration calls)."""
    return build(name, seed, depth=depth, preemption_bound=preemption_bound)
