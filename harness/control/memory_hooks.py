"""The hooks that rewritten code calls at every access to state another thread could see
(``racecheck.control.rewrite``): each records the access on the step about to make it, offers the scheduler a point
before it (``Run.memory``), then makes the access itself, exactly as the original code would have.

Outside a controlled run (an uncontrolled thread, an import, a program that kept a rewritten function after the
exploration) a hook only makes the access. The hooks are names in ``builtins`` (``install``), bound once per
process and never removed: a generator made during an exploration may run its rewritten code later.

``__rc_fn__`` and ``__rc_gm__`` also bring the callee under watch before it runs
(``racecheck.control.memory_discovery``): a function of a module not yet rewritten gets its module rewritten first,
so its first call is already watched.
"""

from __future__ import annotations

import builtins
import operator
import sys
import types
from collections import deque
from collections.abc import Callable
from typing import Any

from racecheck import runtime
from racecheck.control import handoff, real_locks
from racecheck.control import rewrite_nodes as rewrite
from racecheck.control.memory_discovery import PLAIN as _PLAIN
from racecheck.control.memory_discovery import callee as _callee
from racecheck.control.memory_discovery import see as _see
from racecheck.control.memory_discovery import seen_types as _seen_types
from racecheck.control.memory_effects import (
    LAZY_METHODS,
    NO_KEY,
    atomic_addition,
    declared_effect,
    item_effect,
    materialized,
    method_effect,
    reads_of,
)
from racecheck.runtime.access import LIST as _LIST
from racecheck.runtime.access import READ, WRITE

__racecheck_engine__ = True

_state = runtime.thread_state
_FunctionType, _MethodType, _BuiltinType = types.FunctionType, types.MethodType, types.BuiltinFunctionType
_real_getattr, _real_setattr, _real_delattr = getattr, setattr, delattr

# Types whose items are no plain memory: immutable ones, and stand-ins whose item operations are points of their own
# (``no_items``: a served manager's dict), which would otherwise be recorded twice, once under the stand-in's name.
_NO_ITEMS = {str, bytes, tuple, frozenset, range, types.MappingProxyType, memoryview, type(None)}
_CONTAINERS = (dict, list, set, deque, bytearray)
_STDLIB = frozenset(sys.stdlib_module_names)


# ----- attributes -------------------------------------------------------------------------------------------------


def _touch(run: Any, op: str, declared: Any, compute: Callable[..., Any], *args: Any, shown: str | None = None) -> None:
    """An access whose exact pieces of memory depend on the state it meets: the point first (declaring what it may
    touch), then what it touches, read from the state after the point, when other threads may have run."""
    if run.memory_point(op, declared, 2, shown):
        run.replace_memory(compute(*args))
    else:
        run.merge_memory(compute(*args))


def _read_attribute(run: Any, watch: Any, obj: Any, name: str) -> None:
    declared, access = watch.read_attribute(obj, name)
    if declared is not None:
        _touch(run, "read", declared, watch.attribute, obj, name, READ)
    elif access is not None:
        run.memory("read", access, 1)


def get_attribute(obj: Any, name: str) -> Any:
    run = _state.run
    if run is not None:
        watch = run.watch
        kind = type(obj)
        if watch is not None and kind not in _PLAIN:
            if kind not in _seen_types:
                _see(kind)
            _read_attribute(run, watch, obj, name)
    return _real_getattr(obj, name)


def get_method(obj: Any, name: str) -> Any:
    """``obj.name`` about to be called: the attribute read, the callee's discovery, and for a container's method,
    a stand-in that records what the call reads or changes when it is made (after its arguments)."""
    run = _state.run
    if run is None:
        return _real_getattr(obj, name)
    watch = run.watch
    kind = type(obj)
    if watch is not None and kind not in _PLAIN:
        if kind not in _seen_types:
            _see(kind)
        _read_attribute(run, watch, obj, name)
    value = _real_getattr(obj, name)
    if watch is not None and isinstance(obj, _CONTAINERS) and _unwatched_method(value):
        return _container_call(obj, name, value)
    if kind in real_locks.REAL_LOCKS and name in real_locks.LOCK_METHODS:  # a lock made before the run
        return real_locks.lock_method(name, value)
    _callee(value)
    return value if watch is None else handoff.stand_in(value, obj)


def _unwatched_method(value: Any) -> bool:
    """A container's method whose code nobody watches: builtin, or written in the standard library (Counter's)."""
    kind = type(value)
    if kind is _BuiltinType or kind is type(str.join) or kind is type(len.__call__):
        return True
    if kind is _MethodType:
        fn = value.__func__
        module = getattr(fn, "__module__", "") or ""
        return module.partition(".")[0] in _STDLIB
    return False


def _container_call(container: Any, name: str, bound: Any) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        run = _state.run
        if run is None or run.watch is None:
            return bound(*args, **kwargs)
        watch = run.watch
        atomic = atomic_addition(container, name, args, kwargs)  # before an iterator argument is turned into a list
        if name in ("update", "extend", "difference_update", "symmetric_difference_update", "__ior__", "__iadd__"):
            args = materialized(args, 0)
        declared = declared_effect(watch, container, args[0] if args and name in _KEYED else NO_KEY,
                                   name not in _READ_ONLY)
        _touch(run, "call", declared, _call_effect, watch, container, name, args, kwargs,
               shown=f"{watch.name_of(container)}.{name}")
        if atomic:
            run.memory_steps.atomic_addition()
        result = bound(*args, **kwargs)
        if name in LAZY_METHODS:
            watch.remember_lazy(result, (container,))
        return result

    return call


def _call_effect(watch: Any, container: Any, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    effect = method_effect(watch, container, name, args, kwargs)
    return effect + reads_of(watch, args) if name in _READS_ARGUMENTS else effect


# methods whose first argument is the key they touch, and methods that change nothing
_KEYED = frozenset({"get", "setdefault", "pop", "__getitem__", "__setitem__", "__delitem__", "__contains__", "add",
                    "discard", "remove"})
_READ_ONLY = frozenset({"get", "__getitem__", "__contains__", "keys", "values", "items", "copy", "count", "index",
                        "__len__", "__iter__", "__reversed__", "issubset", "issuperset", "isdisjoint", "union",
                        "intersection", "difference", "symmetric_difference", "most_common", "elements"})
_READS_ARGUMENTS = frozenset({"update", "difference_update", "intersection_update", "symmetric_difference_update",
                              "issubset", "issuperset", "isdisjoint", "union", "intersection", "difference",
                              "symmetric_difference"})


def set_attribute(value: Any, obj: Any, name: str) -> None:
    run = _state.run
    if run is not None:
        watch = run.watch
        if watch is not None and type(obj) not in _PLAIN:
            access = watch.attribute(obj, name, WRITE, write=True)
            if access is not None:
                run.memory("write", access + handoff.new_attribute(watch, obj, name))
    _real_setattr(obj, name, value)


def delete_attribute(obj: Any, name: str) -> None:
    run = _state.run
    if run is not None:
        watch = run.watch
        if watch is not None and type(obj) not in _PLAIN:
            access = watch.attribute(obj, name, WRITE, write=True)
            if access is not None:
                run.memory("delete", access + handoff.new_attribute(watch, obj, None))
    _real_delattr(obj, name)


# ----- items --------------------------------------------------------------------------------------------------------


def no_items(kind: type) -> None:
    """``kind``'s items are not watched: its own ``__getitem__``/``__setitem__`` make their points."""
    _NO_ITEMS.add(kind)


def get_item(obj: Any, key: Any) -> Any:
    run = _state.run
    if run is not None:
        watch = run.watch
        if watch is not None and type(obj) not in _NO_ITEMS:
            if isinstance(obj, (list, bytearray)):
                _touch(run, "read", watch.whole(obj, _LIST), item_effect, watch, obj, key, READ)
            else:
                run.memory("read", item_effect(watch, obj, key, READ), 1)
    return obj[key]


def set_item(value: Any, obj: Any, key: Any) -> None:
    run = _state.run
    if run is not None:
        watch = run.watch
        if watch is not None and type(obj) not in _NO_ITEMS:
            _touch(run, "write", declared_effect(watch, obj, key, True), item_effect, watch, obj, key, WRITE)
    obj[key] = value


def delete_item(obj: Any, key: Any) -> None:
    run = _state.run
    if run is not None:
        watch = run.watch
        if watch is not None and type(obj) not in _NO_ITEMS:
            _touch(run, "delete", declared_effect(watch, obj, key, True), _deletion, watch, obj, key)
    del obj[key]


def _deletion(watch: Any, obj: Any, key: Any) -> Any:
    return item_effect(watch, obj, key, WRITE, delete=True)


# ----- globals and cells --------------------------------------------------------------------------------------------


def read_global(module: str, name: str) -> None:
    """Before a read of a rebound global (the rewritten code reads it right after: ``hook(...) or name``)."""
    run = _state.run
    if run is not None:
        watch = run.watch
        if watch is not None:
            run.memory("read", watch.global_(module, name, READ))


def write_global(value: Any, module: str, name: str) -> Any:
    run = _state.run
    if run is not None:
        watch = run.watch
        if watch is not None:
            run.memory("write", watch.global_(module, name, WRITE))
    return value


def delete_global(module: str, name: str) -> None:
    run = _state.run
    if run is not None:
        watch = run.watch
        if watch is not None:
            run.memory("delete", watch.global_(module, name, WRITE))


def _where(holder: Any) -> str:
    return holder.__qualname__.rpartition(".<lambda>")[0] or holder.__qualname__


def read_cell(holder: Any, name: str) -> None:
    """Before a read of a shared closure variable; ``holder`` is a lambda whose closure is the variable's cell."""
    run = _state.run
    if run is not None:
        watch = run.watch
        if watch is not None:
            run.memory("read", watch.cell(holder.__closure__[0], _where(holder), name, READ))


def write_cell(value: Any, holder: Any, name: str) -> Any:
    run = _state.run
    if run is not None:
        watch = run.watch
        if watch is not None:
            run.memory("write", watch.cell(holder.__closure__[0], _where(holder), name, WRITE))
    return value


# ----- calls, iteration, membership, truth --------------------------------------------------------------------------


def callee(value: Any) -> Any:
    """The callee of a call in watched code: discovered, and for a builtin that reads or changes a container (or a
    container's method held in a variable), a stand-in that records it when the call is made."""
    run = _state.run
    if run is None:
        return value
    kind = type(value)
    if kind is _BuiltinType or kind is type:
        effect = _BUILTINS.get(value)
        if effect is not None and run.watch is not None:
            return _builtin_call(value, effect)
        if kind is _BuiltinType:
            owner = value.__self__
            if isinstance(owner, _CONTAINERS) and run.watch is not None:
                return _container_call(owner, value.__name__, value)
            return value if run.watch is None else handoff.stand_in(value)
    _callee(value)
    return value if run.watch is None else handoff.stand_in(value)


def _builtin_call(fn: Any, effect: str) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        run = _state.run
        if run is None or run.watch is None:
            return fn(*args, **kwargs)
        watch = run.watch
        if effect == "attribute":
            if len(args) >= 2 and isinstance(args[1], str) and type(args[0]) not in _PLAIN:
                if fn is setattr or fn is delattr:
                    access = watch.attribute(args[0], args[1], WRITE, write=True)
                    if access is not None:
                        run.memory("write", access)
                else:
                    _read_attribute(run, watch, args[0], args[1])
            return fn(*args, **kwargs)
        if effect == "lazy":
            found = reads_of(watch, args)
            if found:
                run.memory("read", found)
            result = fn(*args, **kwargs)
            sources = tuple(source for value in args for source in watch.sources(value))
            watch.remember_lazy(result, sources)
            return result
        found = reads_of(watch, args[:1] if effect == "first" else args)
        if found:
            run.memory("read", found)
        return fn(*args, **kwargs)

    return call


# builtin -> what it does with its arguments: "reads" (every container argument, whole), "first" (the first only),
# "lazy" (returns an iterator that reads them when advanced), "attribute" (getattr and kin)
_BUILTINS: dict[Any, str] = {
    len: "first", sorted: "first", list: "first", tuple: "first", set: "first", frozenset: "first", dict: "first",
    sum: "first", any: "first", all: "first", bytes: "first", bytearray: "first", deque: "first",
    min: "reads", max: "reads", next: "first", bool: "first",
    iter: "lazy", enumerate: "lazy", zip: "lazy", map: "lazy", filter: "lazy", reversed: "lazy",
    getattr: "attribute", setattr: "attribute", delattr: "attribute", hasattr: "attribute",
}


def iterate(value: Any) -> Any:
    """The iterable of a ``for`` or a comprehension: over a container, every step of the loop reads it."""
    run = _state.run
    if run is None:
        return value
    watch = run.watch
    if watch is None:
        return value
    sources = watch.sources(value)
    if not sources:
        return value
    return _reading(run, reads_of(watch, sources), iter(value))


def _reading(run: Any, effect: Any, iterator: Any) -> Any:
    advance = iterator.__next__
    while True:
        if _state.run is run:
            run.memory("iterate", effect)
        try:
            value = advance()
        except StopIteration:
            return
        yield value


def contains(item: Any, container: Any) -> bool:
    run = _state.run
    if run is not None:
        watch = run.watch
        if watch is not None:
            kind = type(container)
            if kind in (dict, set) or isinstance(container, (dict, set)):
                run.memory("read", watch.item(container, item, READ))
            elif isinstance(container, _CONTAINERS):
                run.memory("read", reads_of(watch, (container,)))
            else:
                sources = watch.sources(container)
                if sources:
                    run.memory("read", reads_of(watch, sources))
    return item in container


def truth(value: Any) -> Any:
    """A value whose truth the code tests: a container's is its length, a read of its entries."""
    run = _state.run
    if run is not None and isinstance(value, _CONTAINERS):
        watch = run.watch
        if watch is not None:
            run.memory("read", reads_of(watch, (value,)))
    return value


def unpack(value: Any) -> Any:
    """A value unpacked whole (``a, b = x``, ``f(*x)``, ``{**x}``): a read of every item."""
    run = _state.run
    if run is not None:
        watch = run.watch
        if watch is not None:
            found = reads_of(watch, (value,))
            if found:
                run.memory("read", found)
    return value


_INPLACE = {
    "+=": operator.iadd, "-=": operator.isub, "*=": operator.imul, "@=": operator.imatmul, "/=": operator.itruediv,
    "//=": operator.ifloordiv, "%=": operator.imod, "**=": operator.ipow, "<<=": operator.ilshift,
    ">>=": operator.irshift, "|=": operator.ior, "^=": operator.ixor, "&=": operator.iand,
}
# in-place operators that change a container where it is (the method they call)
_INPLACE_METHODS = {"+=": "__iadd__", "*=": "__imul__", "|=": "__ior__", "-=": "__isub__", "&=": "__iand__",
                    "^=": "__ixor__"}


def inplace(op: str, left: Any, right: Any) -> Any:
    """``left op right`` as an augmented assignment computes it; on a container that changes in place, a write."""
    run = _state.run
    if run is not None and isinstance(left, _CONTAINERS) and op in _INPLACE_METHODS:
        watch = run.watch
        if watch is not None:
            args = materialized((right,), 0)
            right = args[0]
            _touch(run, "write", watch.whole(left, WRITE), _inplace_effect, watch, left, _INPLACE_METHODS[op], args)
    return _INPLACE[op](left, right)


def _inplace_effect(watch: Any, left: Any, method: str, args: tuple[Any, ...]) -> Any:
    return method_effect(watch, left, method, args, {}) + reads_of(watch, args)


HOOKS: dict[str, Any] = {
    rewrite.GETATTR: get_attribute, rewrite.SETATTR: set_attribute, rewrite.DELATTR: delete_attribute,
    rewrite.GETITEM: get_item, rewrite.SETITEM: set_item, rewrite.DELITEM: delete_item,
    rewrite.GLOBAL_READ: read_global, rewrite.GLOBAL_WRITE: write_global, rewrite.GLOBAL_DELETE: delete_global,
    rewrite.CELL_READ: read_cell, rewrite.CELL_WRITE: write_cell, rewrite.CALLEE: callee,
    rewrite.METHOD: get_method, rewrite.ITERATE: iterate, rewrite.CONTAINS: contains, rewrite.TRUTH: truth,
    rewrite.UNPACK: unpack, rewrite.INPLACE: inplace, rewrite.SLICE: slice, rewrite.CONTEXT: real_locks.context,
}
assert set(HOOKS) == set(rewrite.HOOK_NAMES)


def install() -> None:
    """Bind the hooks' names in ``builtins`` (once per process; left in place, see the module's docstring)."""
    for name, hook in HOOKS.items():
        if builtins.__dict__.get(name) is not hook:
            setattr(builtins, name, hook)

