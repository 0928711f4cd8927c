"""A one-scenario catalogue whose scenario passes and has a data race (two workers add to the counter's lock-free
``n`` with no lock, and nothing checks it), for the CLI's data-race output. Loaded with
``RACECHECK_CATALOGUE=cli_race_catalogue``; targets are the stub catalogue's counters."""

from __future__ import annotations

import threading
from typing import Any

from cli_stub_catalogue import (  # noqa: F401 - the catalogue API
    Prepared,
    Scenario,
    ScenarioError,
    Target,
    load_target,
    lookup,
    run_in,
)


def _unlocked(target: Target) -> None:
    counter = target.obj()

    def work() -> None:
        counter.n += 1  # the racing line

    threads = [threading.Thread(target=work) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


class WatchedScenario(Scenario):
    """A stub scenario explored with memory watched (the stub catalogue's turn it off)."""

    def build(self, target: Target, fs: str) -> Prepared:
        prepared = super().build(target, fs)
        prepared.explore_kwargs.pop("memory", None)
        return prepared


CATALOGUE: dict[str, Any] = {
    "unlocked-count": WatchedScenario(
        "unlocked-count", "two workers add to one counter (nothing checks it).", ("real",), ("real",), _unlocked,
        instrument=(__name__,),
    ),
}
STOCK_TARGET = "cli_stub_catalogue:RacyCounter"
FIXED_TARGET = "cli_stub_catalogue:LockedCounter"


def get(name: str) -> Scenario:
    return lookup(CATALOGUE, name)


def run(name: str, target: str = STOCK_TARGET, fs: str = "real", **kwargs: Any):
    return run_in(CATALOGUE, name, target, fs, **kwargs)
