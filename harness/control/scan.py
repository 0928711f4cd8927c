"""Where control by default swaps names: the globals, in every loaded module it reaches, that hold a real object of
the swaps. Found by walking every loaded module's globals, and remembered between explorations.

A test session explores again and again with the same modules loaded (thousands, with torch and Lightning), and an
exploration's setup is paid by each of its schedules, so the walk is done in three depths:

* nothing changed since the last exploration (the same module objects in ``sys.modules``, each reached module's
  globals the same size, the same swaps and exclusions): the names found last time are used again, and each is
  checked by identity when it is swapped;
* something changed (a module imported since, a module that gained globals): every module is looked at, but only
  a module that is new, or whose globals changed size, is walked again;
* the first time for these swaps: every module is walked. What was found for other swaps (the fake filesystem's
  joined them, or files on the real disk are left off) is kept beside it, so explorations that alternate between
  configurations each find theirs.

A module is walked with ``set.isdisjoint`` over the ids of its values, in C, and only one that holds something is
walked name by name. What is remembered can miss a module that rebinds an existing global to a real primitive
after an exploration without changing its size; a module imported or reloaded again is always walked.
"""

from __future__ import annotations

import sys
import types
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__racecheck_engine__ = True

_modules = sys.modules
_ModuleType = types.ModuleType
KEEP = 4  # sets of swaps whose walks are remembered besides the current one


@dataclass
class _Snapshot:
    """The answer of the last walk and what it depended on."""

    exclusions: Any
    modules: list[Any]  # sys.modules' values then, compared by identity
    namespaces: list[dict]  # the globals of every module reached
    sizes: list[int]  # their sizes then
    hits: list[tuple[dict, tuple[str, ...]]]  # the globals holding something to swap, and under which names


class Scan:
    """The walk and its memory; one per process (``SCAN``)."""

    def __init__(self) -> None:
        self.swap_ids: frozenset[int] = frozenset()
        # id(globals) -> (size, module name, names, the module): what a walk found in each module's globals
        self.found: dict[int, tuple[int, str, tuple[str, ...], Any]] = {}
        self.last: _Snapshot | None = None
        # what the walks found for other swaps (another exploration's options: files on the real disk or not, the
        # fake filesystem), the most recent ``KEEP``: explorations that alternate between them, as a test session
        # with several configurations or bench_engine's rows do, would walk every module each time (~100 ms with
        # torch and Lightning loaded, a millisecond a schedule of a 100-schedule exploration)
        self.others: dict[frozenset[int], tuple[dict, _Snapshot | None]] = {}

    def _switch(self, swap_ids: frozenset[int]) -> None:
        """Other swaps than the last walk's: what was found for them before, if anything, and this walk's kept."""
        if self.swap_ids:
            self.others[self.swap_ids] = (self.found, self.last)
            while len(self.others) > KEEP:
                del self.others[next(iter(self.others))]
        self.found, self.last = self.others.pop(swap_ids, ({}, None))
        self.swap_ids = swap_ids

    def targets(self, swap_ids: frozenset[int], reached: Callable[[str, dict], bool], exclusions: Any
                ) -> list[tuple[dict, tuple[str, ...]]]:
        """(globals, names) for every module ``reached(name, globals)`` says control reaches whose globals hold, under
        those names, an object whose id is in ``swap_ids``. ``exclusions``: a key of what ``reached`` excludes."""
        if swap_ids != self.swap_ids:
            self._switch(swap_ids)
        modules = list(_modules.values())
        last = self.last
        if (last is not None and last.exclusions == exclusions and last.modules == modules
                and list(map(len, last.namespaces)) == last.sizes):
            return last.hits
        items = list(_modules.items())
        modules = [module for _, module in items]
        namespaces: list[dict] = []
        sizes: list[int] = []
        hits: list[tuple[dict, tuple[str, ...]]] = []
        found = self.found
        for name, module in items:
            if not isinstance(module, _ModuleType):
                continue
            namespace = module.__dict__
            if not reached(name, namespace):
                continue
            size = len(namespace)
            namespaces.append(namespace)
            sizes.append(size)
            entry = found.get(id(namespace))
            if entry is None or entry[0] != size or entry[1] != name or entry[3]() is not module:
                # the last check: a module dropped since (a test module pytester re-imports, a program loaded under
                # one name after another) frees its globals, and a new module's may get their address
                entry = (size, name, _holding(namespace, swap_ids), module_ref(module))
                found[id(namespace)] = entry
            if entry[2]:
                hits.append((namespace, entry[2]))
        self.last = _Snapshot(exclusions, modules, namespaces, sizes, hits)
        return hits


def module_ref(module: Any) -> Callable[[], Any]:
    """A weak reference to ``module``, or a strong one where its type has none: a module subclass made in C
    (cffi's ``Lib``, which sys.modules holds for a compiled extension) refuses weak references, and such a module
    lives as long as the process anyway."""
    try:
        return weakref.ref(module)
    except TypeError:
        return lambda: module


def _holding(namespace: dict, swap_ids: frozenset[int]) -> tuple[str, ...]:
    """The names in ``namespace`` whose value's id is in ``swap_ids``."""
    try:
        if swap_ids.isdisjoint(map(id, namespace.values())):
            return ()
        pairs = list(namespace.items())
    except RuntimeError:  # another thread is importing into it right now
        pairs = list(namespace.copy().items())
    return tuple(name for name, value in pairs if id(value) in swap_ids)


SCAN = Scan()
