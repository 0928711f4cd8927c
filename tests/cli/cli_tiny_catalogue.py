"""A one-scenario catalogue whose whole schedule space is small (fewer schedules than one chunk of 25), for the
CLI's exhaustion and coverage output. Loaded with ``RACECHECK_CATALOGUE=cli_tiny_catalogue``; targets are the
stub catalogue's counters (the body only uses their lock-free ``n``)."""

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


def _handoff(target: Target) -> None:
    """Two workers take one lock in turn: two interleavings (who goes first), a handful of schedules."""
    counter = target.obj()
    lock = threading.Lock()

    def work() -> None:
        with lock:
            counter.n += 1

    threads = [threading.Thread(target=work) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert counter.n == 2


CATALOGUE: dict[str, Any] = {
    "lock-handoff": Scenario(
        "lock-handoff", "two workers taking one lock in turn always count two.", ("real",), ("real",), _handoff,
        instrument=(__name__,),
    ),
}
STOCK_TARGET = "cli_stub_catalogue:RacyCounter"
FIXED_TARGET = "cli_stub_catalogue:LockedCounter"


def get(name: str) -> Scenario:
    return lookup(CATALOGUE, name)


def run(name: str, target: str = STOCK_TARGET, fs: str = "real", **kwargs: Any):
    return run_in(CATALOGUE, name, target, fs, **kwargs)
