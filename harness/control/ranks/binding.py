"""Where a process binds ``torch.distributed``'s functions by name, found in the parent before a fork.

A child of the run swaps the rank model's functions in wherever a module bound torch's by name
(``from torch.distributed import barrier``). Finding those bindings means reading every value of every module
namespace that may hold one: ~50,000 values where Lightning is imported. In a forked child each read moves a
reference count on a page shared with the parent, and the kernel copies the page: the walk cost each child ~65 ms,
at every schedule, in any process that had imported Lightning, whether or not the program used ``torch.distributed``.
The parent walks instead, as the child starts (its pages are its own), and a forked child, a copy of it at that
moment, swaps at the places found. A child that is no copy of the walking parent (spawned, forkserver, a warm
template's) finds nothing remembered under its walk's mark and walks itself.
"""

from __future__ import annotations

import itertools
import os
import sys
from typing import Any

__racecheck_engine__ = True

_NONE = object()  # what no namespace holds (``None`` would match every binding of None)
_SERIAL = itertools.count(1)
# the last walk: (pid of the process that walked, its serial), and the (module, name) places it found
_LAST: tuple[tuple[int, int], tuple[tuple[str, str], ...]] = ((0, 0), ())


def may_bind(name: str) -> bool:
    """Whether module ``name`` may hold torch's functions by name: the program's modules and torch.distributed's
    (the rest of torch and the stdlib never do; skipping them keeps a child's start short)."""
    top = name.partition(".")[0]
    if top == "torch":
        return name.startswith("torch.distributed")
    return top not in sys.stdlib_module_names


def places(reals: dict[int, Any]) -> tuple[tuple[str, str], ...]:
    """Every (module, name) whose value is one of ``reals`` (by id, the object itself kept in the dict)."""
    ids = frozenset(reals)
    found = []
    for module_name, module in list(sys.modules.items()):
        namespace = getattr(module, "__dict__", None)
        # asked of the namespace, never of the module: a module's __getattr__ is the program's code (see
        # memory_install._wrapped_function), which would run on the child's thread only where torch.distributed is
        if not namespace or not may_bind(module_name) or namespace.get("__racecheck_engine__", False):
            continue
        if ids.isdisjoint(map(id, namespace.values())):  # nearly every module: passed over at C speed
            continue
        for key, value in list(namespace.items()):
            if reals.get(id(value), _NONE) is value:
                found.append((module_name, key))
    return tuple(found)


def remember(reals: dict[int, Any]) -> tuple[int, int]:
    """In the parent, as a child starts: walk, remember the places, and return the walk's mark."""
    global _LAST
    mark = (os.getpid(), next(_SERIAL))
    _LAST = (mark, places(reals))
    return mark


def remembered(mark: tuple[int, int]) -> tuple[tuple[str, str], ...] | None:
    """In a child: the places its parent found under ``mark`` if this process is that parent's copy, else None."""
    walked, found = _LAST
    return found if walked == mark else None
