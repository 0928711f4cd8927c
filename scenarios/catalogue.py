"""The scenario catalogue: a race scenario is a workload plus its oracle, run against any checkpoint IO class.

A target is given as ``module:Class`` (stock ``lightning.pytorch.plugins.io.async_plugin:AsyncCheckpointIO`` or
``racecheck.fixed_impl:LockedAsyncCheckpointIO``); the module that defines the class is instrumented, so the
target runs unmodified with its threads, locks, queues and executor under racecheck's control.
Lightning appears only here and in fixed_impl, never in the engine.
"""

from __future__ import annotations

import importlib
import inspect
import os
import shutil
import tempfile
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


class ScenarioError(Exception):
    """Unknown scenario or unusable target; the message is one line meant for the user."""


@dataclass(frozen=True)
class Scenario:
    name: str
    summary: str
    body: Callable[[type], None]  # runs the workload against a target class and raises AssertionError on a bug
    fs: str | None = None  # None: real temp dir; "posix" / "windows": racecheck's fake filesystem, fresh per schedule

    def test_function(self, target: type) -> Callable[[], None]:
        def scenario() -> None:
            self.body(target)

        scenario.__module__ = __name__
        scenario.__qualname__ = f"{self.name}[{target.__module__}:{target.__qualname__}]"
        return scenario


def load_target(spec: str) -> type:
    """Import ``module:Class`` with a one-line ScenarioError for anything that is not a usable class."""
    if not isinstance(spec, str) or spec.count(":") != 1:
        raise ScenarioError(f"target {spec!r} must look like 'package.module:ClassName'")
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise ScenarioError(f"target {spec!r} must look like 'package.module:ClassName'")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # noqa: BLE001 - reported to the user as one line
        raise ScenarioError(f"cannot import target module {module_name!r}: {type(exc).__name__}: {exc}") from None
    target: Any = module
    for part in attr.split("."):
        target = getattr(target, part, None)
        if target is None:
            raise ScenarioError(f"module {module_name!r} has no attribute {attr!r}")
    if not inspect.isclass(target):
        raise ScenarioError(f"target {spec!r} is not a class")
    return target


def instrumented_modules(target: type) -> list[types.ModuleType]:
    """The target's own module: where its ThreadPoolExecutor / threading names live."""
    module = importlib.import_module(target.__module__)
    return [module]


def _new_io(target: type) -> Any:
    from lightning.pytorch.plugins.io.torch_plugin import TorchCheckpointIO

    return target(TorchCheckpointIO())


def _save_save_remove(target: type, directory: str) -> None:
    """save(a); save(b); remove(a); teardown(): the remove must cancel a's queued write or run after it, so a.ckpt
    must not exist afterwards, b.ckpt must, and no error may escape (a PermissionError on Windows semantics)."""
    import torch

    io = _new_io(target)
    a, b = os.path.join(directory, "a.ckpt"), os.path.join(directory, "b.ckpt")
    io.save_checkpoint({"step": torch.tensor(1)}, a)
    io.save_checkpoint({"step": torch.tensor(2)}, b)
    io.remove_checkpoint(a)
    io.teardown()
    if os.path.exists(a):
        raise AssertionError("leaked checkpoint: a.ckpt was removed, then its queued write recreated it")
    if not os.path.exists(b):
        raise AssertionError("lost checkpoint: b.ckpt was saved but is missing after teardown")


def delete_while_queued(target: type) -> None:
    """Scenario 1 on a real temporary directory."""
    directory = tempfile.mkdtemp(prefix="racecheck-scenario-")
    try:
        _save_save_remove(target, directory)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def delete_while_queued_fakefs(target: type) -> None:
    """Scenario 1 on the fake filesystem: every file operation is a scheduling point, OS semantics per scenario."""
    from racecheck import fakefs

    _save_save_remove(target, os.path.join(fakefs.root(), "ckpts"))


CATALOGUE: dict[str, Scenario] = {
    s.name: s
    for s in [
        Scenario("delete-while-queued", "remove of a checkpoint whose save is still queued", delete_while_queued),
        Scenario(
            "delete-while-queued-windows",
            "the same on the fake filesystem with Windows semantics (sharing violations on open files)",
            delete_while_queued_fakefs,
            fs="windows",
        ),
        Scenario(
            "delete-while-queued-posix",
            "the same on the fake filesystem with POSIX semantics (file operations are scheduling points)",
            delete_while_queued_fakefs,
            fs="posix",
        ),
    ]
}


def get(name: str) -> Scenario:
    try:
        return CATALOGUE[name]
    except KeyError:
        known = ", ".join(sorted(CATALOGUE))
        raise ScenarioError(f"unknown scenario {name!r} (known: {known})") from None
