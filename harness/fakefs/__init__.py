"""racecheck's fake filesystem: an in-memory store whose every operation is a scheduling point.

Two ways in, one store per run:
  * ``racefs://`` (fsspec, entry point in pyproject) — usable standalone too (process-global default store);
  * os-level stand-ins for ``os``, ``os.path``, ``io``, ``open``, ``shutil``, ``tempfile`` in instrumented modules,
    for paths under the run's mount root (default ``/racefs``); other paths go to the real OS untouched.

Engine contract: ``begin_run(run, fs)`` before the test function of every schedule, ``end_run(run, crashed)``
after all its threads are gone (applies the power loss). See docs/fakefs.md.

Importing this package defines things and announces its extension to the runtime (the engine imports it when a
Config sets ``fs=``, see ``racecheck.runtime.declare_provider``); the stand-ins, the real-disk guard and
``racefs://`` are registered when the engine activates the fake filesystem (``activation.activate``).
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any

from racecheck.fakefs import pycompat as _pycompat
from racecheck.fakefs.activation import activate
from racecheck.fakefs.integrations import torch_hooks as _torch_hooks
from racecheck.fakefs.mount import current_store, default_store, reset_default_store, run_store
from racecheck.fakefs.os_calls import fake_open, io_facade, os_facade, path_facade
from racecheck.fakefs.pycompat import UnservedPathError
from racecheck.fakefs.semantics import WinPermissionError
from racecheck.fakefs.shutil_calls import shutil_facade, tempfile_facade
from racecheck.fakefs.spec import FakeFS, as_spec
from racecheck.fakefs.store import Store

__all__ = ["FakeFS", "Store", "root", "current_store", "default_store", "reset_default_store",
           "DEFAULT_MODULES", "default_modules", "begin_run", "end_run", "prepare", "WinPermissionError",
           "os_facade", "path_facade", "io_facade", "shutil_facade", "tempfile_facade", "fake_open",
           "UnservedPathError"]

# Modules whose file access Lightning checkpointing goes through; instrument them when fs= is given.
_CANDIDATE_MODULES = (
    "fsspec.implementations.local",
    "lightning.fabric.utilities.cloud_io",
    "lightning.fabric.plugins.io.torch_io",
    "lightning.pytorch.plugins.io.torch_plugin",
    "lightning.pytorch.callbacks.model_checkpoint",
    "lightning.pytorch.trainer.connectors.checkpoint_connector",
    "torch.serialization",
    *_pycompat.pathlib_modules(),
)


class _ModuleList(tuple):
    """A tuple of module names whose iteration also registers stand-ins for optional packages (torch) as soon as
    the consumer has imported them: the engine imports each name while iterating, then instruments."""

    def __iter__(self):
        for name in tuple.__iter__(self):
            yield name
            _torch_hooks.register()


# Only those whose top-level package is installed (checked without importing anything heavy).
DEFAULT_MODULES = _ModuleList(m for m in _CANDIDATE_MODULES if importlib.util.find_spec(m.split(".")[0]) is not None)


def prepare() -> None:
    """Activate the fake filesystem (once per process, see activation.py), then register stand-ins that depend on
    optional, already loaded packages (torch) and for I/O functions stdlib classes captured at import (3.10
    pathlib accessor, 3.13 glob). The engine calls it before instrumenting; begin_run calls it too. Idempotent
    and cheap."""
    activate()
    _torch_hooks.register()
    _pycompat.install_captured_io()


def default_modules() -> list[str]:
    """DEFAULT_MODULES that import in this environment (imports them; registers the torch stand-in)."""
    names = []
    for name in DEFAULT_MODULES:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - an optional module that is absent or broken is skipped
            continue
        names.append(name)
    prepare()
    return names


def root() -> str:
    """The mount root of the calling thread's run (e.g. "/racefs"); outside a run, the default store's."""
    store = run_store()
    return store.root if store is not None else default_store().root


def begin_run(run: Any, fs: Any) -> Store:
    """Engine hook: a fresh store for this schedule, from ``fs`` ("posix", "windows" or a FakeFS)."""
    prepare()
    store = Store(as_spec(fs))
    run.resources["fakefs"] = store
    return store


def end_run(run: Any, crashed: bool) -> None:
    """Engine hook, after all threads of the run are gone: on a crash, keep only what a power loss keeps."""
    store = run.resources.get("fakefs")
    if store is not None and crashed:
        store.power_loss()


class _Extension:
    """The fake filesystem as an engine extension (``racecheck.runtime.Extension``), active when Config.fs is set."""

    name = "fakefs"

    def active(self, config: Any) -> bool:
        return config.fs is not None

    def modules(self, config: Any) -> list[str]:
        return default_modules()

    def config_key(self, config: Any) -> str:
        return config.fs if isinstance(config.fs, str) else as_spec(config.fs).config_key()

    def begin_run(self, run: Any, config: Any) -> None:
        begin_run(run, config.fs)

    def end_run(self, run: Any, crashed: bool) -> None:
        end_run(run, crashed)


# The runtime's provider contract: importing the provider module (done by the engine when a Config sets fs=)
# makes its extension known. Announcing is all it does: activation waits for the engine's hooks (see above).
extension = _Extension()  # registered by the engine when a Config sets fs= (racecheck.runtime.declare_provider)

__racecheck_engine__ = True  # the fake is part of the engine: never instrumented itself
