"""What a module facade is: ``ModuleFacade``, the one implementation of a module stand-in. Its instances live with
the stand-ins they serve: ``racecheck.control.sync_facades`` (threading, queue, concurrent.futures, time, os for
the sync stand-ins) and the fake filesystem's (``racecheck.fakefs``: os, os.path, io, shutil, tempfile).

Code under test that did ``import threading`` or ``import os`` holds the module itself; during a run that global
is swapped for a facade: a module object that answers with the controlled stand-ins for the names it overrides
and reads every other name from the real module at access time (so later monkeypatches of the real module are
seen). ``hidden(name)`` lets a subclass make a name disappear under some condition (the fake filesystem hides
POSIX-only ``os`` names under Windows semantics).
"""

from __future__ import annotations

import types
from typing import Any

__racecheck_engine__ = True


_overrides: dict[int, tuple[types.ModuleType, dict[str, Any]]] = {}


def register_override(real: types.ModuleType, name: str, replacement: Any) -> None:
    """Every facade of ``real`` (whoever built it) answers ``name`` with ``replacement`` unless it overrides it
    itself: lets the engine virtualise ``os.getpid`` even where the fake filesystem's ``os`` facade is in place."""
    _overrides.setdefault(id(real), (real, {}))[1][name] = replacement


class ModuleFacade(types.ModuleType):
    """A module that answers like ``real`` except for ``overrides``."""

    def __init__(self, real: types.ModuleType, overrides: dict[str, Any]) -> None:
        super().__init__(real.__name__, getattr(real, "__doc__", None))
        # What the import system and introspection read of a module (a submodule imported through a facade
        # looks up its parent's __path__ and __spec__), the real module's, not the None a new module has.
        for dunder in ("__spec__", "__loader__", "__package__", "__file__", "__path__"):
            if dunder in real.__dict__:
                self.__dict__[dunder] = real.__dict__[dunder]
        self.__dict__["__racecheck_facade__"] = real
        self.__dict__.update(overrides)

    def hidden(self, name: str) -> bool:
        """Whether ``name`` should look absent right now (subclass hook); by default nothing is hidden."""
        return False

    def __getattr__(self, name: str) -> Any:  # only called for names the facade does not override itself
        real = self.__dict__["__racecheck_facade__"]
        if self.hidden(name):
            raise AttributeError(f"module {real.__name__!r} has no attribute {name!r}")
        shared = _overrides.get(id(real))
        if shared is not None and name in shared[1]:
            return shared[1][name]
        return getattr(real, name)

    def __repr__(self) -> str:
        return f"<racecheck facade of module {self.__dict__['__racecheck_facade__'].__name__!r}>"


def real_module(module: Any) -> Any:
    """The real module behind a facade, or ``module`` itself."""
    return getattr(module, "__dict__", {}).get("__racecheck_facade__", module)
