"""Control in a spawned child: a fresh interpreter has none of the stand-ins a forked child inherits, so before the
process's code runs they are installed there as the exploration installed them in the parent, from the options
the proxy sends with "go" (the exploration's ``ControlOptions`` and extension options, recorded here by
``install.joining`` for the exploration's length).

So a spawned child's locks, events, sleeps, files (the real disk's and the fake filesystem's) and line points are
points of the run, as a forked child's are. What is installed stays for the child's life: the interpreter ends
with the process.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import sys
import types
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

from racecheck import runtime
from racecheck.control import autocontrol, instrument, lines, memory_install, threads
from racecheck.control.options import ControlOptions

__racecheck_engine__ = True

# The running exploration's options, while ``install.joining`` is open in this process: (control, extensions).
OPTIONS: tuple[ControlOptions, Any, tuple[str, ...]] | None = None

HASH_SEED = "0"  # the string-hash seed of every spawned (or forkserver) child of a run

_installed = ExitStack()  # a spawned child's installation: never closed, the interpreter ends with the child


def portable(options: tuple[ControlOptions, Any] | None) -> tuple[ControlOptions, Any, tuple[str, ...]] | None:
    """``options`` as they cross to a fresh interpreter: modules named by their dotted names, and the modules
    of the extensions they activate (an extension's module holds it as ``extension``)."""
    if options is None:
        return None
    control, world = options

    def named(value: Any) -> Any:
        if isinstance(value, types.ModuleType):
            return value.__name__
        if isinstance(value, (list, tuple)):
            return tuple(named(v) for v in value)
        return value

    control = dataclasses.replace(control, instrument=named(control.instrument), exclude=named(control.exclude),
                                  preempt=named(control.preempt))
    return control, world, tuple(type(ext).__module__ for ext in runtime.extensions_for(world))


def install(home: str | None, chosen: tuple[ControlOptions, Any, tuple[str, ...]]) -> None:
    """In a spawned child, before its code runs: control by default, the extensions' stand-ins and the explicitly
    controlled modules (``home``: the target's module, as the test's own is in the parent), line points."""
    control, world, providers = chosen
    for name in providers:  # a fresh interpreter has not imported the api layer, which declares them
        runtime.register_extension(importlib.import_module(name).extension)
    extensions = runtime.extensions_for(world)
    targets: list[Any] = []
    if home and home in sys.modules:
        targets.append(sys.modules[home])
    targets.extend(control.instrument)
    for ext in extensions:
        targets.extend(ext.modules(world))
    excluded = autocontrol.Exclusions(control.exclude)
    modules = [m for m in instrument.resolve_modules(targets) if m.__name__ not in excluded]
    everywhere = autocontrol.install([ext.name for ext in extensions], control.exclude)
    _installed.callback(everywhere.restore)
    patch = instrument.apply(modules)
    _installed.callback(patch.restore)
    _installed.enter_context(threads.controlled_thread_class())  # threads of the run's threads join it
    if control.memory:  # the child's plain memory watched as the parent's (``child_memory``)
        home_module = sys.modules.get(home or "")
        roots = [v for v in vars(home_module).values() if isinstance(v, types.FunctionType)] if home_module else []
        _installed.enter_context(memory_install.watching(control.exclude, roots))
    preempt = control.preempt
    if preempt is not None:
        named = modules if preempt == "lines" else instrument.resolve_modules(
            [preempt] if not isinstance(preempt, (list, tuple)) else list(preempt))
        _installed.enter_context(lines.tracing(lines.files_of(named)))


@contextmanager
def hash_seed(method: str) -> Iterator[None]:
    """Around the real start of a child that is a fresh interpreter (or forked from a template that was one): its
    string hashing is seeded with ``HASH_SEED``, whatever this process's environment says. A fresh interpreter
    draws its own seed, and code that iterates a set of strings (typing_extensions' protocol check, run by DCP's
    daemon) makes its accesses in that order: a token found with one seed diverged in a replay with another."""
    if method == "fork":
        yield
        return
    before = os.environ.get("PYTHONHASHSEED")
    os.environ["PYTHONHASHSEED"] = HASH_SEED
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("PYTHONHASHSEED", None)
        else:
            os.environ["PYTHONHASHSEED"] = before
