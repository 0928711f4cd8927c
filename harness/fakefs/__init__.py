"""racecheck's fake filesystem: an in-memory store whose every operation is a scheduling point.

Two ways in, one store per run:
  * ``racefs://`` (fsspec, entry point in pyproject) — usable standalone too (process-global default store);
  * os-level stand-ins for ``os``, ``os.path``, ``io``, ``open``, ``shutil``, ``tempfile``, wherever control by default
    reaches (every module but the engine's and the standard library's, plus pathlib's), for paths under the run's
    mount root (default ``/racefs``) and fake descriptors; other paths go to the real OS untouched.

Engine contract: ``begin_run(run, fs)`` before the test function of every schedule, ``end_run(run, crashed)``
after all its threads are gone (applies the power loss). See docs/fakefs.md.

Importing this package defines things and announces its extension to the runtime (the engine imports it when a
Config sets ``fs=``, see ``racecheck.runtime.declare_provider``); the stand-ins, the real-disk guard and
``racefs://`` are registered when the engine activates the fake filesystem (``activation.activate``).
"""

from __future__ import annotations

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
from racecheck.runtime import RunContract

__all__ = ["FakeFS", "Store", "root", "current_store", "default_store", "reset_default_store",
           "stdlib_modules", "begin_run", "end_run", "prepare", "WinPermissionError",
           "os_facade", "path_facade", "io_facade", "shutil_facade", "tempfile_facade", "fake_open",
           "UnservedPathError"]


def prepare() -> None:
    """Activate the fake filesystem (once per process, see activation.py), then register stand-ins that depend on
    optional, already loaded packages (torch) and for I/O functions stdlib classes captured at import (3.10
    pathlib accessor, 3.13 glob). The engine calls it before instrumenting; begin_run calls it too. Idempotent
    and cheap."""
    activate()
    _torch_hooks.register()
    _pycompat.install_captured_io()


def stdlib_modules() -> list[str]:
    """The standard-library modules whose own file I/O must reach the store: pathlib's (and glob, which 3.13's
    ``Path.glob`` lists through). Control by default leaves the standard library alone, so the engine instruments
    these explicitly; every other module is reached without being named. Activates the fake filesystem first."""
    prepare()
    return list(_pycompat.pathlib_modules())


def root() -> str:
    """The mount root of the calling thread's run (e.g. "/racefs"); outside a run, the default store's."""
    store = run_store()
    return store.root if store is not None else default_store().root


def begin_run(run: RunContract, fs: Any) -> Store:
    """Engine hook: a fresh store for this schedule, from ``fs`` ("posix", "windows" or a FakeFS)."""
    prepare()
    store = Store(as_spec(fs))
    run.resources["fakefs"] = store
    return store


def end_run(run: RunContract, crashed: bool) -> None:
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
        return stdlib_modules()

    def config_key(self, config: Any) -> str:
        return config.fs if isinstance(config.fs, str) else as_spec(config.fs).config_key()

    def begin_run(self, run: RunContract, config: Any) -> None:
        begin_run(run, config.fs)

    def end_run(self, run: RunContract, crashed: bool) -> None:
        end_run(run, crashed)


# The runtime's provider contract: importing the provider module (done by the engine when a Config sets fs=)
# makes its extension known. Announcing is all it does: activation waits for the engine's hooks (see above).
extension = _Extension()  # registered by the engine when a Config sets fs= (racecheck.runtime.declare_provider)

__racecheck_engine__ = True  # the fake is part of the engine: never instrumented itself
