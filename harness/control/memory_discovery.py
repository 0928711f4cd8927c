"""Discovery: what brings code under memory watch as the memory hooks meet it (``racecheck.control.memory_hooks``).

Before watched code calls a function, or uses an object of a class, the hooks tell ``discovery`` (the exploration's
``racecheck.control.memory_install.Watching``), which rewrites the module it comes from if it has not yet, so the
code is watched from its first run. What discovery has decided on is remembered per exploration (``settle``); in a
learning run of sampled watching the code of every function watched code calls is also noted (``called``,
``racecheck.control.memory_sampling``).
"""

from __future__ import annotations

import types
from collections import deque
from typing import Any

__racecheck_engine__ = True

_FunctionType, _MethodType = types.FunctionType, types.MethodType

# Types whose attributes are no memory of the program: immutable values, builtin containers (their attributes are
# methods), code. Their items are another matter (``memory_hooks._NO_ITEMS`` says which have none worth naming).
PLAIN: set[type] = {
    int, float, complex, bool, str, bytes, tuple, frozenset, type(None), range, slice, list, dict, set, deque,
    bytearray, _FunctionType, _MethodType, types.BuiltinFunctionType, types.CodeType, types.CellType, property,
    staticmethod, classmethod, memoryview, type(len.__call__), type(str.join), type(Ellipsis), type(NotImplemented),
    super,
}


class Discovery:
    """What brings a callee's code under watch before it runs; ``racecheck.control.memory_install`` provides it."""

    def function(self, fn: Any) -> None:
        """``fn`` (a Python function) is about to be called from watched code."""

    def type_(self, cls: type) -> None:
        """An object of ``cls`` is being used (its methods, properties and dunders may run)."""


discovery = Discovery()
seen_types: set[type] = set()  # types whose modules discovery has been told about (reset per exploration)
_settled: set[Any] = set()  # code objects discovery has decided on (reset per exploration)
_seen_modules: set[Any] = set()  # modules of the function-made classes met (reset per exploration)
called: set[Any] | None = None  # the code of the functions watched code calls, during a learning run
# The code of functions discovery left as they are because their module is not watched (the standard library's,
# an ``exclude=``d one, one with no source): watched code that calls one hands its arguments over
# (``racecheck.control.handoff``). Reset per exploration.
unwatched: set[Any] = set()


def reset() -> None:
    """A new exploration: discovery decides afresh (another exploration may exclude other modules)."""
    seen_types.clear()
    _settled.clear()
    unwatched.clear()
    _seen_modules.clear()


def settle(code: Any) -> None:
    """``code`` needs no discovery: it is rewritten, or it stays as it is."""
    _settled.add(code)


def unsettle(code: Any) -> None:
    """``code`` (a function's own, given back for a sampled run) is again a reason for discovery."""
    _settled.discard(code)


def is_settled(code: Any) -> bool:
    return code in _settled


def see(cls: type) -> None:
    """Discovery for a type met for the first time in this exploration. A class made by a function call (a new one
    at every call) is not remembered, its module is: remembering it would keep every such class alive."""
    if "<locals>" in getattr(cls, "__qualname__", ""):
        module = getattr(cls, "__module__", None)
        if module in _seen_modules:
            return
        _seen_modules.add(module)
    else:
        seen_types.add(cls)
    discovery.type_(cls)


def callee(value: Any) -> None:
    """Discovery for a value about to be called; in a learning run, its code noted in ``called``."""
    kind = type(value)
    if kind is _MethodType:
        value = value.__func__
        if type(value) is not _FunctionType:
            return
        kind = _FunctionType
    if kind is _FunctionType:
        if value.__code__ not in _settled:
            discovery.function(value)
        if called is not None:
            called.add(value.__code__)
    elif kind is type or isinstance(value, type):
        if value not in seen_types:
            see(value)
    elif kind not in seen_types and kind not in PLAIN:
        see(kind)  # a callable object: its class's __call__
