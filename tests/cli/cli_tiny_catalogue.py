"""A one-scenario catalogue whose whole schedule space is small (fewer schedules than one chunk of 25), for the
CLI's exhaustion and coverage output. Loaded with ``RACECHECK_CATALOGUE=cli_tiny_catalogue``; targets are the
stub catalogue's counters (the body only uses their lock-free ``n``)."""

from __future__ import annotations

import threading
from typing import Any

import racecheck
from cli_stub_catalogue import Prepared, ScenarioError, Target, load_target  # noqa: F401 - the catalogue API


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


class Scenario:
    name = "lock-handoff"
    oracle = "two workers taking one lock in turn always count two."
    semantics = ("real",)
    default_semantics = ("real",)
    small = True

    def build(self, target: Target, fs: str) -> Prepared:
        if fs not in self.semantics:
            raise ScenarioError(f"scenario {self.name!r} does not run under {fs!r}")

        def fn() -> None:
            _handoff(target)

        fn.__qualname__ = f"{self.name}[{target.spec}]"
        return Prepared(fn, {"fs": None, "instrument": [__name__]})


CATALOGUE: dict[str, Any] = {"lock-handoff": Scenario()}
STOCK_TARGET = "cli_stub_catalogue:RacyCounter"
FIXED_TARGET = "cli_stub_catalogue:LockedCounter"


def get(name: str) -> Scenario:
    try:
        return CATALOGUE[name]
    except (KeyError, TypeError):
        raise ScenarioError(f"unknown scenario {name!r} (known: {', '.join(CATALOGUE)})") from None


def run(name: str, target: str = STOCK_TARGET, fs: str = "real", **kwargs: Any):
    prepared = get(name).build(load_target(target), fs)
    return racecheck.explore(prepared.fn, **{**prepared.explore_kwargs, **kwargs})
