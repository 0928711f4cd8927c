"""What the search layer is told of an exploration, and the parts a ``racecheck.Config`` is split into.

Each layer receives its own part (``Parts``): the search its ``SearchOptions`` (strategy, budget, what to do with a
failure and with data races), the control layer its ``racecheck.control.options.ControlOptions``, every run its
``racecheck.runtime.records.RunConfig``, and the extensions (the fake filesystem, real-disk files) their
``racecheck.runtime.ExtensionOptions``. The api layer's ``Config.parts()`` makes them; nothing below it reads a
``Config``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from racecheck.control.options import ControlOptions
from racecheck.runtime import ExtensionOptions
from racecheck.runtime.records import RunConfig

__racecheck_engine__ = True


@dataclass(frozen=True)
class SearchOptions:
    """How schedules are chosen and judged (the fields of ``racecheck.Config`` of the same names; ``bound`` is
    ``Config.bound``, the preemption bound resolved for the strategy: an int, or None for none)."""

    strategy: str
    schedules: int
    seed: int
    bound: int | None
    depth: int = 3
    shrink_budget: int = 300
    check_determinism: bool = False
    max_failures: int = 1
    race_budget: int = 40
    skip_duplicates: bool = True
    database: Any = None
    progress: Callable[[Any], Any] | None = None
    locations: str = "failures"
    data_races: str = "report"
    benign: tuple[str, ...] = ()
    atomic_races: bool = False
    on_crash: Callable[[], Any] | None = None  # the recovery check run after a simulated crash


class Parts(NamedTuple):
    """A ``racecheck.Config`` split by layer."""

    search: SearchOptions
    control: ControlOptions
    run: RunConfig
    extensions: ExtensionOptions
