"""A minimal stand-in for the engine's Run, so the store can be tested without the scheduler.

It records every scheduling point and answers ``choose`` from a script (label -> value, default 0), which is all
the store needs from a run. Integration tests through ``racecheck.explore`` live in test_engine_integration.py.
"""

from __future__ import annotations

import contextlib
import types
from typing import Any

import racecheck.fakefs as fakefs
from racecheck.control import autocontrol, instrument
from racecheck.errors import Crashed
from racecheck.runtime import bind


class FakeRun:
    def __init__(self, choices: dict[str, Any] | None = None) -> None:
        self.resources: dict[str, Any] = {}
        self.points: list[str] = []
        self.accesses: list[tuple] = []  # what each point touches, as the store said
        self.choices = dict(choices or {})
        self.drawn: list[tuple[str, int, int]] = []
        self.clock = 0.0
        self.crash_reason: str | None = None

    def schedule(self, op: str, *, access: tuple = (), enabled: Any = None, timeout: Any = None,
                 skip: int = 0) -> bool:
        self.points.append(op)
        self.accesses.append(tuple(access))
        return True

    def touch(self, access: tuple) -> None:
        if self.accesses:
            self.accesses[-1] += tuple(a for a in access if a not in self.accesses[-1])

    def narrow(self, access: tuple) -> None:
        if self.accesses:
            self.accesses[-1] = tuple(access)

    def choose(self, n: int, label: str) -> int:
        value = self.choices.get(label, 0)
        if isinstance(value, list):
            value = value.pop(0) if value else 0
        value = min(int(value), n - 1)
        self.drawn.append((label, n, value))
        return value

    def now(self) -> float:
        return self.clock

    def sleep(self, seconds: float) -> None:
        self.points.append(f"sleep {seconds}")
        self.clock += seconds

    def crash(self, reason: str) -> None:
        self.crash_reason = reason
        raise Crashed(reason)

    def on_finish(self, callback: Any) -> None:
        pass

    def new_object_id(self, kind: str) -> str:
        return f"{kind}#0"


@contextlib.contextmanager
def bound_run(fs: Any = "posix", choices: dict | None = None, modules: tuple = (), everywhere: bool = False):
    """Bind a FakeRun with a fresh store to this thread (and instrument ``modules``) for the block.
    ``everywhere``: control by default as an exploration with ``fs=`` has it (no module named)."""
    run = FakeRun(choices)
    fakefs.begin_run(run, fs)
    if everywhere:
        modules = (*fakefs.stdlib_modules(), *modules)
    installed = autocontrol.install([fakefs.extension.name]) if everywhere else None
    patch = instrument.apply(instrument.resolve_modules(modules)) if modules else None
    bind(run, types.SimpleNamespace(tid=0))  # a thread record: library code asks get_ident() of it
    try:
        yield run
    finally:
        bind(None, None)
        if patch is not None:
            patch.restore()
        if installed is not None:
            installed.restore()
