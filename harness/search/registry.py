"""The one table of exploration strategies: their names, what each is for, and where each is built.

Config validates against it, the CLI and the pytest plugin offer its names, the gate accepts them, and ``build``
makes a strategy from it (``make_strategy`` is the same with Config's options by position). It imports nothing of
racecheck and loads a strategy's module only when one is built, so a front end can list the names without loading
the engine.
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


ENTRIES: tuple[StrategyEntry, ...] = (
    StrategyEntry("random", "racecheck.search.random_walk", "RandomWalk", (),
                  "uniform choice among the runnable threads at every point"),
    StrategyEntry("pct", "racecheck.search.pct", "PCT", ("depth",),
                  "probabilistic concurrency testing: random priorities, depth-1 change points"),
    StrategyEntry("dfs", "racecheck.search.dfs", "BoundedDFS", ("preemption_bound",),
                  "exhaustive depth-first search within a preemption bound"),
    StrategyEntry("pos", "racecheck.search.pos", "POS", (),
                  "partial order sampling: random priorities reset on conflicting accesses"),
)

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


def make_strategy(name: str, seed: int, depth: int, preemption_bound: int | None) -> Any:
    """The strategy ``name`` as ``build`` makes it, with Config's options by position (what an exploration calls)."""
    return build(name, seed, depth=depth, preemption_bound=preemption_bound)
