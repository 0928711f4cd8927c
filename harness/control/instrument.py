"""How unmodified code comes under control: swapping names in the globals of chosen modules.

A module that did ``import threading`` or ``from concurrent.futures import ThreadPoolExecutor`` holds references to
the real objects in its globals. For the duration of a run we replace every global whose *value is* a registered
real object (matched by identity, so aliases like ``import threading as th`` are caught) with its controlled
stand-in, and put the originals back afterwards, pass or fail. Builtins such as ``open`` are not module globals;
they are shadowed by inserting a global of the same name and removing it on restore.

The stand-ins decide at call time whether the caller is a controlled thread (``runtime.current_run()``), so a
swapped module keeps working for uncontrolled threads during a run.

Every swap belongs to a group: ``"sync"`` for the stand-ins of ``racecheck.sync``, and an extension's name for its
own (the fake filesystem's are ``"fakefs"``). Explicitly instrumented modules get every registered swap, as they
always have; control by default (``racecheck.control.autocontrol``) applies only the groups of the exploration's
active extensions, so the fake filesystem's stand-ins stay out of library code when no ``fs=`` is given.
"""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any


class InstrumentError(Exception):
    """A module named for instrumentation cannot be imported or is not a module."""


_swaps: dict[int, tuple[Any, Any]] = {}
_builtin_swaps: dict[str, Any] = {}
# What control by default applies, per group (see the module docstring): id(real) -> (real, replacement).
_everywhere: dict[str, dict[int, tuple[Any, Any]]] = {}
_everywhere_builtins: dict[str, dict[str, Any]] = {}


def register_swap(real: Any, replacement: Any, group: str = "sync", everywhere: bool = True) -> None:
    """Within instrumented modules, every global that *is* ``real`` becomes ``replacement`` during a run.
    ``group``: who registers it (``"sync"`` or an extension's name); ``everywhere=False`` keeps it to explicitly
    instrumented modules (a facade whose forwarding costs more in library code than what it controls there)."""
    _swaps[id(real)] = (real, replacement)
    table = _everywhere.setdefault(group, {})
    if everywhere:
        table[id(real)] = (real, replacement)
    else:
        table.pop(id(real), None)


def register_builtin_swap(name: str, replacement: Any, group: str = "sync") -> None:
    """Shadow builtin ``name`` (e.g. ``open``) in instrumented modules during a run; with control by default, the
    builtin itself is replaced while ``group`` is active."""
    _builtin_swaps[name] = replacement
    _everywhere_builtins.setdefault(group, {})[name] = replacement


def swaps_for(groups: Iterable[str]) -> dict[int, tuple[Any, Any]]:
    """The swaps control by default applies for ``groups`` ("sync" first, then each active extension's): a later
    group's swap of the same real object wins, as a later registration does for explicit instrumentation."""
    merged: dict[int, tuple[Any, Any]] = {}
    for group in dict.fromkeys(["sync", *groups]):
        merged.update(_everywhere.get(group, {}))
    return merged


def builtin_swaps_for(groups: Iterable[str]) -> dict[str, Any]:
    """The builtins control by default replaces for ``groups``."""
    merged: dict[str, Any] = {}
    for group in dict.fromkeys(["sync", *groups]):
        merged.update(_everywhere_builtins.get(group, {}))
    return merged


def resolve_modules(targets: Iterable[Any]) -> list[types.ModuleType]:
    """Turn module objects / dotted names (``"pkg.*"`` for all loaded submodules) into module objects."""
    modules: list[types.ModuleType] = []
    seen: set[int] = set()

    def add(mod: types.ModuleType) -> None:
        if id(mod) not in seen:
            seen.add(id(mod))
            modules.append(mod)

    for target in targets:
        if isinstance(target, types.ModuleType):
            add(target)
            continue
        if not isinstance(target, str):
            raise InstrumentError(f"cannot instrument {target!r}: expected a module or a dotted module name")
        recursive = target.endswith(".*")
        name = target[:-2] if recursive else target
        try:
            root = importlib.import_module(name)
        except Exception as exc:  # noqa: BLE001 - any import failure is a user error here
            raise InstrumentError(f"cannot instrument {name!r}: {type(exc).__name__}: {exc}") from None
        add(root)
        if recursive:
            prefix = name + "."
            for mod_name in sorted(sys.modules):
                mod = sys.modules[mod_name]
                if mod_name.startswith(prefix) and isinstance(mod, types.ModuleType):
                    add(mod)
    return modules


@dataclass
class Patch:
    """The globals changed in one run, to be undone exactly."""

    replaced: list[tuple[dict, str, Any]] = field(default_factory=list)
    inserted: list[tuple[dict, str]] = field(default_factory=list)

    def restore(self) -> None:
        for namespace, name, original in reversed(self.replaced):
            namespace[name] = original
        for namespace, name in reversed(self.inserted):
            namespace.pop(name, None)
        self.replaced.clear()
        self.inserted.clear()


def apply(modules: Iterable[types.ModuleType]) -> Patch:
    """Swap registered names in ``modules``; the returned Patch undoes it."""
    patch = Patch()
    replacements = {id(rep) for _, rep in _swaps.values()} | {id(rep) for rep in _builtin_swaps.values()}
    try:
        for module in modules:
            namespace = module.__dict__
            if namespace.get("__racecheck_engine__"):
                continue  # never instrument the engine itself
            swap_namespace(namespace, _swaps, patch)
            for name, replacement in _builtin_swaps.items():
                if name not in namespace:
                    patch.inserted.append((namespace, name))
                    namespace[name] = replacement
                elif id(namespace[name]) in replacements:
                    continue
    except BaseException:
        patch.restore()
        raise
    return patch


def swap_namespace(namespace: dict, swaps: dict[int, tuple[Any, Any]], patch: Patch) -> int:
    """Swap every value of ``namespace`` that *is* a real object of ``swaps``, recorded in ``patch``; how many."""
    count = 0
    for name, value in list(namespace.items()):
        entry = swaps.get(id(value))
        if entry is not None and entry[0] is value:
            patch.replaced.append((namespace, name, value))
            namespace[name] = entry[1]
            count += 1
    return count
