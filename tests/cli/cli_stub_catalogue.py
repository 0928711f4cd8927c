"""A small Lightning-free scenario catalogue with the racecheck.scenarios API, for fast CLI tests.

Loaded through ``RACECHECK_CATALOGUE=cli_stub_catalogue`` (with this directory on PYTHONPATH), also by worker
processes and execnet gateways. Targets are counters: ``RacyCounter`` reads, yields at a point, then writes (a lost
update); ``LockedCounter`` holds a lock across the same steps. A third target races only under Windows semantics;
``TwoBugCounter`` has two distinct bugs and ``RefusingCounter`` fails under every schedule (not a race).
"""

from __future__ import annotations

import importlib
import inspect
import os
import threading
from dataclasses import dataclass, field
from typing import Any

import racecheck
from racecheck import fakefs


class ScenarioError(Exception):
    pass


class RacyCounter:
    def __init__(self) -> None:
        self.n = 0

    def add(self) -> None:
        value = self.n
        racecheck.point("between read and write")
        self.n = value + 1


class LockedCounter(RacyCounter):
    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()

    def add(self) -> None:
        with self.lock:
            super().add()


class TwoBugCounter(RacyCounter):
    """Two distinct bugs: the lost update, and a claim on the counter that another add can take over in between
    (RuntimeError in the worker): ``--max-failures 2`` reports both."""

    def __init__(self) -> None:
        super().__init__()
        self.owner: object = None

    def add(self) -> None:
        super().add()
        me = object()
        self.owner = me
        racecheck.point("claimed")
        if self.owner is not me:
            raise RuntimeError("another add claimed the counter")


class RefusingCounter(RacyCounter):
    """Fails whatever the order: a configuration error, not a race."""

    def add(self) -> None:
        raise TypeError("this counter refuses to count (configuration error)")


class OpenWhileRemoving:
    """Writes a file while another thread removes it: fine on POSIX, a sharing violation on Windows."""

    def write(self, path: str) -> None:
        with open(path, "w") as handle:
            racecheck.point("writing")
            handle.write("x")

    def remove(self, path: str) -> None:
        try:
            os.remove(path)
        except FileNotFoundError:
            pass


@dataclass(frozen=True)
class Target:
    spec: str
    obj: Any


@dataclass
class Prepared:
    fn: Any
    explore_kwargs: dict = field(default_factory=dict)


def _fs_kwargs(fs: str) -> dict:
    return {"fs": None if fs == "real" else fs}


def _counter_body(target: Target) -> None:
    counter = target.obj()
    threads = [threading.Thread(target=counter.add) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert counter.n == 2, f"lost update: counter is {counter.n} after two increments"


def _file_body(target: Target) -> None:
    obj = target.obj() if hasattr(target.obj, "write") else OpenWhileRemoving()
    path = os.path.join(fakefs.root(), "f.txt")
    threads = [threading.Thread(target=obj.write, args=(path,)), threading.Thread(target=obj.remove, args=(path,))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def _order_body(target: Target) -> None:
    """Four threads append their number after three points each; only the fully reversed order fails: rare."""
    order: list[int] = []

    def worker(n: int) -> None:
        for i in range(3):
            racecheck.point(f"w{n}.{i}")
        order.append(n)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert order != [3, 2, 1, 0], f"reversed order {order}"


@dataclass(frozen=True)
class Scenario:
    name: str
    oracle: str
    semantics: tuple[str, ...]
    default_semantics: tuple[str, ...]
    body: Any
    small: bool = True
    instrument: tuple[str, ...] = ()  # modules besides this one whose threading the body uses

    def build(self, target: Target, fs: str) -> Prepared:
        if fs not in self.semantics:
            raise ScenarioError(f"scenario {self.name!r} does not run under {fs!r}")
        if self.body is _counter_body and not hasattr(target.obj, "add"):  # noqa: SIM102
            raise ScenarioError(f"target {target.spec!r} is not a counter")
        body = self.body

        def fn() -> None:
            body(target)

        fn.__qualname__ = f"{self.name}[{target.spec}]"
        kwargs = _fs_kwargs(fs)
        # The CLI's mechanics are the subject (cells, counts, exhaustion notes, jobs): the counters' spaces are
        # kept as small as their marked points make them, without memory watching's own points.
        kwargs["memory"] = False
        if self.instrument:
            kwargs["instrument"] = list(self.instrument)
        return Prepared(fn, kwargs)


CATALOGUE: dict[str, Scenario] = {
    s.name: s
    for s in [
        Scenario("lost-update", "two increments always count two.", ("real", "posix"), ("real",), _counter_body),
        Scenario("rare-order", "four workers never finish in reversed order.", ("real",), ("real",), _order_body),
        Scenario("open-remove", "removing a file being written never raises.", ("posix", "windows"),
                 ("posix", "windows"), _file_body),
    ]
}
STOCK_TARGET = "cli_stub_catalogue:RacyCounter"
FIXED_TARGET = "cli_stub_catalogue:LockedCounter"


def lookup(catalogue: dict[str, Scenario], name: str) -> Scenario:
    """``get`` over any catalogue of these scenarios (the tiny catalogue has one of its own)."""
    try:
        return catalogue[name]
    except (KeyError, TypeError):
        raise ScenarioError(f"unknown scenario {name!r} (known: {', '.join(catalogue)})") from None


def get(name: str) -> Scenario:
    return lookup(CATALOGUE, name)


def load_target(spec: str) -> Target:
    if not isinstance(spec, str) or spec.count(":") != 1 or not all(spec.partition(":")[::2]):
        raise ScenarioError(f"target {spec!r} must look like 'package.module:Attr'")
    module_name, _, attr = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # noqa: BLE001
        raise ScenarioError(f"cannot import target module {module_name!r}: {type(exc).__name__}: {exc}") from None
    obj = getattr(module, attr, None)
    if not inspect.isclass(obj):
        raise ScenarioError(f"target {spec!r} is not a class")
    return Target(spec, obj)


def run_in(catalogue: dict[str, Scenario], name: str, target: str, fs: str, **kwargs: Any):
    """``run`` over any catalogue of these scenarios."""
    prepared = lookup(catalogue, name).build(load_target(target), fs)
    return racecheck.explore(prepared.fn, **{**prepared.explore_kwargs, **kwargs})


def run(name: str, target: str = STOCK_TARGET, fs: str = "real", **kwargs: Any):
    return run_in(CATALOGUE, name, target, fs, **kwargs)
