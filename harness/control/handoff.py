"""The hand-off: watched code handing a shared object to code racecheck does not watch (a C function or method, a
builtin, the standard library's Python code, an ``exclude=``d module) is an access, recorded at the call.

Without it, ``json.dumps(d)`` reads every item of ``d`` unseen while another thread writes them, and the
partial-order search would prove a racy program correct. So the memory hooks give every unwatched callee a stand-in
(``stand_in``) recording, at the call, what it does to each argument and receiver and to everything they reach:

* a *reader* (serialisers, copies, formatting, joins, constructors such as ``OrderedDict(x)``, ``itertools``):
  a listing of each container (``LIST``: it conflicts with every change of an item) and a read of each attribute;
* a *mutator* (``random.shuffle``, ``heapq.heappush``): a change of every item of its first argument;
* any other callee: a hand-off (``Kind.HANDOFF``) of every piece, conflicting with every access; what it added, written.

``vars(obj)`` hands back the object's own attribute dict: it is named as the object (``Watch.alias``), its items as
the attributes. ``vars(cls)`` hands back a view no hook watches: a blind spot (``handoff_counts``). Immutable
values hold nothing (a tuple's contents are walked); a callee that keeps its arguments unread (``Thread``) nothing.
A walk meeting over ``LIMIT`` objects records unresolved memory instead (a wildcard: sound, coarse). A lazy result
(``itertools``, ``map``) reads what it was made from when advanced. Each access names the callee (``Access.via``):
a data race reads ``T2 read all of dict#1 via json.dumps``. Objects a walk meets first are named under the object
handed (``dict#1 in ExitStack#1``), and no walk is learned from by sampled watching: how far a walk reaches can
depend on what the process did before, and neither names nor what sampled runs watch may.
"""

from __future__ import annotations

import io
import sys
import threading
import types
from collections import deque
from collections.abc import Callable
from typing import Any

from racecheck import runtime
from racecheck.control import handoff_streams
from racecheck.control.handoff_counts import blind, unknown_callees
from racecheck.control.handoff_table import BY_NAME, CONTAINER_READS, MUTATES, READER_MODULES, READS, UNKNOWN
from racecheck.control.memory_discovery import PLAIN, callee, unwatched
from racecheck.runtime.access import LIST, MEMORY_OBJ, READ, WRITE, Access, Kind

__racecheck_engine__ = True

_state = runtime.thread_state
LIMIT = 256  # objects one hand-off walks before it records unresolved memory instead

# Values with nothing another thread could change (a tuple or frozenset is walked for what it holds).
_LEAVES = frozenset({int, float, complex, bool, str, bytes, type(None), range, slice, type(Ellipsis),
                     type(NotImplemented), memoryview, types.CodeType, types.FunctionType, types.BuiltinFunctionType,
                     types.MethodType, types.ModuleType, property, staticmethod, classmethod, type, super})
_CONTAINERS = (dict, list, set, bytearray, deque)
_C_CALLABLES = (types.BuiltinFunctionType, types.MethodWrapperType, types.MethodDescriptorType,
                types.WrapperDescriptorType, types.ClassMethodDescriptorType)

planted_off = [False]  # a test's planted bug: hand-offs record nothing (``tests/search/test_handoff_soundness.py``)


def reset() -> None:
    """A new exploration (which may exclude other modules: what is watched is decided again)."""
    unknown_callees.clear()
    blind.clear()
    _effects.clear()
    _WALKS.clear()


# ----- what a callee is -----------------------------------------------------------------------------------------------


def label_of(fn: Any) -> str:
    """How a report names a callee: ``json.dumps``, ``str.join``, ``mylib.encode``."""
    target = getattr(fn, "__func__", fn)
    qualname = getattr(target, "__qualname__", None) or getattr(type(target), "__qualname__", "?")
    module = getattr(target, "__module__", None)
    if module is None:  # a C method: named by the class that defines it
        owner = getattr(fn, "__objclass__", None) or getattr(fn, "__self__", None)
        name = getattr(fn, "__name__", "")
        if owner is not None and not isinstance(owner, types.ModuleType):
            for klass in (owner if isinstance(owner, type) else type(owner)).__mro__:
                if name in klass.__dict__:
                    module, qualname = klass.__module__, f"{klass.__qualname__}.{name}"
                    break
    if not module or module == "builtins":
        return qualname
    if module.startswith("_") and module[1:] in sys.modules:
        module = module[1:]
    return f"{module}.{qualname}"


# callee key -> (its effect, its label), or None: nothing to record
_effects: dict[Any, tuple[str, str] | None] = {}


def _key(fn: Any) -> Any:
    """A callee across calls: a method's function, a builtin's type and name, an object's type (its __eq__ may recur)"""
    owner = getattr(fn, "__self__", None)
    if owner is None or isinstance(owner, types.ModuleType):
        return fn if type(fn) is types.FunctionType or isinstance(fn, (type, *_C_CALLABLES)) else (type(fn), "call")
    func = getattr(fn, "__func__", None)
    if func is not None:
        return func
    return (type(owner) if not isinstance(owner, type) else owner, getattr(fn, "__name__", ""))


def effect_of(fn: Any) -> tuple[str, str] | None:
    """What calling ``fn`` does to the objects it is handed, if ``fn`` is code racecheck does not watch (``READS``,
    ``MUTATES``, ``UNKNOWN``), with the callee's name; None when it is watched code, racecheck's own, or known to
    look at nothing. Remembered per callee for the exploration."""
    try:
        key = _key(fn)
        found = _effects.get(key, _MISSING)
    except TypeError:  # an unhashable callable object
        key, found = None, _MISSING
    if found is _MISSING:
        effect = _classify(fn)
        found = None if effect is None else (effect, label_of(fn))
        if key is not None:
            _effects[key] = found
    return found


_MISSING = object()


def _classify(fn: Any) -> str | None:
    kind = type(fn)
    owner = getattr(fn, "__self__", None)
    if owner is not None and not isinstance(owner, types.ModuleType) and _own(type(owner).__module__):
        return None  # a method of one of racecheck's stand-ins: a scheduling point that records itself
    if kind is types.MethodType:
        inner = fn.__func__
        if type(inner) is types.FunctionType and inner.__code__ not in unwatched:
            return None
    elif kind is types.FunctionType:
        if fn.__code__ not in unwatched:
            return None
    elif isinstance(fn, type):
        if _own(getattr(fn, "__module__", "")) or issubclass(fn, BaseException):
            return None
        init = getattr(fn, "__init__", None)
        if type(init) is types.FunctionType:
            callee(init)  # discovery decides whether its module is watched (an ``exclude=``d one is not)
            if init.__code__ in unwatched:
                return _named_effect(fn)
        if not foreign(fn):
            return None  # a class of the program: its methods run watched (its module is rewritten)
    elif not isinstance(fn, _C_CALLABLES):
        call = getattr(kind, "__call__", None)  # noqa: B004 (the method itself, to see whether it is watched code)
        if type(call) is types.FunctionType and call.__code__ not in unwatched:
            return None  # a callable object of watched code
        if _own(getattr(kind, "__module__", "")):
            return None
    elif _own(getattr(fn, "__module__", None) or getattr(type(getattr(fn, "__self__", None)), "__module__", "")):
        return None
    return _named_effect(fn)


def _named_effect(fn: Any) -> str | None:
    """The effect of an unwatched callee, by its name: the tables, a container's method, a reader module, or
    unknown."""
    label = label_of(fn)
    if label in BY_NAME:
        return BY_NAME[label]
    owner = getattr(fn, "__self__", None)
    if isinstance(owner, _CONTAINERS) or getattr(fn, "__objclass__", None) in _CONTAINERS:
        return READS if getattr(fn, "__name__", "") in CONTAINER_READS else MUTATES
    module = label.rpartition(".")[0]
    while module:
        if module in READER_MODULES:
            return READS
        module = module.rpartition(".")[0]
    return UNKNOWN


def foreign(cls: type) -> bool:
    """A class whose code racecheck does not watch: written in C, or in the standard library."""
    if not cls.__flags__ & _HEAPTYPE:
        return True
    return (getattr(cls, "__module__", "") or "").partition(".")[0] in _STDLIB


_HEAPTYPE = 1 << 9
_STDLIB = frozenset(sys.stdlib_module_names)


def _engine_value(value: Any) -> bool:
    """One of racecheck's own objects (a stand-in, a module facade): what is done to it, it records itself.
    Asked of the type only, through ``type``'s own lookups: ``isinstance`` reads ``value.__class__``, which runs the
    value's ``__getattribute__`` (torch's deprecated ``reduce_op`` defines one, rewritten, that calls
    ``object.__getattribute__``: a hand-off again, and so on without end)."""
    kind = type(value)
    found = _ENGINE_TYPES.get(kind)
    if found is None:
        try:
            module = type.__getattribute__(kind, "__module__")
        except AttributeError:
            module = ""
        found = _ENGINE_TYPES[kind] = issubclass(kind, types.ModuleType) or _own(module if type(module) is str else "")
    return found


_ENGINE_TYPES: dict[type, bool] = {}


def _own(module: Any) -> bool:
    if not isinstance(module, str):
        return False
    if module.partition(".")[0] == "racecheck":
        return True
    found = sys.modules.get(module)
    return found is not None and "__racecheck_engine__" in found.__dict__


# ----- the stand-in ---------------------------------------------------------------------------------------------------


def stand_in(fn: Any, receiver: Any = None) -> Any:
    """``fn`` as watched code calls it: itself when it is watched or looks at nothing, else a stand-in that records
    the hand-off of its arguments (and ``receiver``, a method's object) when the call is made."""
    kind = type(fn)
    if kind is types.FunctionType:
        if fn.__code__ not in unwatched:
            return fn
    elif kind is types.MethodType:
        inner = fn.__func__
        if type(inner) is types.FunctionType and inner.__code__ not in unwatched:
            return fn
    found = effect_of(fn)
    if found is None:
        return fn
    return _recording(fn, found[0], found[1], receiver)


class _Busy(threading.local):
    """The calling thread is in a hand-off's bookkeeping: the program's code that runs there (a rewritten
    ``__getattribute__`` met while naming what was handed: torch's ``reduce_op``) calls callees plainly."""

    on = False


_busy = _Busy()


def _recording(fn: Any, effect: str, label: str, receiver: Any) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        run = _state.run
        if run is None or run.watch is None or planted_off[0] or _busy.on:
            return fn(*args, **kwargs)
        handed = [a for a in args if type(a) not in _LEAVES]
        handed.extend(v for v in kwargs.values() if type(v) not in _LEAVES)
        if receiver is not None and type(receiver) not in _LEAVES:
            handed.append(receiver)
        if handed:
            _busy.on = True
            try:
                handed = [value for value in handed if not _engine_value(value)]
            finally:
                _busy.on = False
        if not handed:
            if fn is vars and args and isinstance(args[0], type) and not _own(args[0].__module__):
                blind[label] = blind.get(label, 0) + 1  # a class's attributes, read through a proxy no hook watches
            return fn(*args, **kwargs)
        return _hand_off(run, fn, effect, label, handed, args, kwargs)

    return call


def _quietly(work: Callable[..., Any], *args: Any) -> Any:
    """``work(*args)``, a part of a hand-off's bookkeeping (``_Busy``)."""
    _busy.on = True
    try:
        return work(*args)
    finally:
        _busy.on = False


def _hand_off(run: Any, fn: Any, effect: str, label: str, handed: list[Any], args: tuple, kwargs: dict) -> Any:
    watch = run.watch
    declared, before = _quietly(accesses, watch, effect, handed, label)
    if not declared:
        return _quietly(_returned, watch, label, handed, fn(*args, **kwargs))
    if effect == UNKNOWN:
        unknown_callees[label] = unknown_callees.get(label, 0) + 1
    shown = label if type(handed[0]) in _LEAVES_NAMED else f"{_quietly(watch.name_of, handed[0])} to {label}"
    if run.memory_point("hand", declared, 2, shown):  # above _hand_off: call, then the caller
        declared, before = _quietly(accesses, watch, effect, handed, label)  # other threads may have run meanwhile
        run.replace_memory(declared)
    else:
        run.merge_memory(declared)
    result = fn(*args, **kwargs)
    if before and _state.run is run:
        added = _quietly(_added, watch, before, label)
        if added:
            run.merge_memory(added)
    return _quietly(_returned, watch, label, handed, result)


def _returned(watch: Any, label: str, handed: list[Any], result: Any) -> Any:
    """What the callee gave back: an alias of a handed object's attributes is a blind spot; an iterator reads what
    it was handed whenever it is advanced."""
    if type(result) is dict:
        for value in handed:
            if _attribute_dict(value) is result:  # the object's own attributes, read and changed as a dict
                watch.alias(result, value)
                break

    if result is not None and hasattr(type(result), "__next__") and not isinstance(result, _CONTAINERS):
        sources = tuple(s for value in handed for s in watch.sources(value))
        watch.remember_lazy(result, sources)  # an iterator over what it was handed: read when advanced
    return result


_LEAVES_NAMED = (tuple, frozenset)


def accesses(watch: Any, effect: str, handed: list[Any], label: str) -> tuple[tuple[Access, ...], list[Any]]:
    """What handing ``handed`` to a callee of ``effect`` touches, each access naming the callee; and, for a callee
    that may change them, the key sets of the containers and instances it reached (to find what it added)."""
    out: list[Access] = []
    before: list[Any] = []
    seen: set[int] = set()
    first = handed[0] if effect == MUTATES else _MISSING
    # (value, whether it was reached through an object of a foreign class: such an object's own foreign objects
    # are its internals, a logger's manager, not the program's data, and are not walked)
    todo = [(value, False) for value in reversed(handed)]
    roots = [watch.name_of(value) for value in handed  # what the program handed: named as the program met them
             if type(value) not in _LEAVES and _WALKS.get(type(value), _walk_of(type(value))) not in (_SKIP, _HOLDER)]
    walking, watch.walking = watch.walking, roots[0] if roots else label
    try:
        return _walk(watch, effect, label, todo, first, out, before, seen)
    finally:
        watch.walking = walking


def _walk(watch: Any, effect: str, label: str, todo: list, first: Any, out: list[Access], before: list[Any],
          seen: set[int]) -> tuple[tuple[Access, ...], list[Any]]:
    while todo:
        value, inside = todo.pop()
        kind = type(value)
        if kind in _LEAVES or id(value) in seen:
            continue
        seen.add(id(value))
        if len(seen) > LIMIT:
            return (Access(MEMORY_OBJ, WRITE, via=label),), []
        lazy = watch.lazy.get(id(value))
        if lazy is not None and lazy[0] is value:
            todo.extend((source, inside) for source in reversed(lazy[1]))
            continue
        walk = _WALKS.get(kind)
        if walk is None:
            walk = _walk_of(kind)
        if walk == _SKIP:
            continue
        if walk == _HOLDER:
            todo.extend((inner, inside) for inner in reversed(value))
            continue
        how = Kind.HANDOFF if effect == UNKNOWN else WRITE if value is first else READ
        if walk == _STREAM:
            out.extend(handoff_streams.touched(watch, value, how, label))
            continue
        if walk == _CONTAINER:
            out.extend(_container(watch, value, how))
            if how is not READ and isinstance(value, (dict, set)):
                before.append((value, None, set(value)))
            inner_values = list(value.values()) if isinstance(value, dict) else list(value)
            if isinstance(value, dict):
                inner_values.extend(k for k in value if type(k) not in _LEAVES)
            todo.extend((inner, inside) for inner in reversed(inner_values))
        else:
            alien = walk == _FOREIGN
            if alien and inside:
                continue
            held = _attributes(value)
            if type(_attribute_dict(value)) is dict:  # its attributes as a whole: one added or removed
                out.extend(watch.whole(value, LIST if how is READ else how))
            for name, _inner in held:
                found = watch.attribute(value, name, how, write=how is not READ)
                if found:
                    out.extend(found)
            todo.extend((inner, inside or alien) for _name, inner in reversed(held))
            if how is not READ:
                before.append((value, "attributes", {name for name, _ in held}))
    return tuple(a._replace(via=label) for a in dict.fromkeys(out)), before


_SKIP, _HOLDER, _CONTAINER, _PROGRAM, _FOREIGN, _STREAM = range(6)
_WALKS: dict[type, int] = {}  # type -> how a hand-off's walk treats its objects


def _walk_of(kind: type) -> int:
    """How a walk treats objects of ``kind``: nothing in them (plain values, racecheck's own objects), only what
    they hold (tuple, frozenset), a container, an object of the program, or of the standard library or C."""
    if kind in _LEAVES or kind in PLAIN and not issubclass(kind, _CONTAINERS) or _own(getattr(kind, "__module__", "")):
        walk = _SKIP
    elif issubclass(kind, io.IOBase):
        walk = _STREAM  # its state is C state (position, buffer): one piece of memory (handoff_streams)
    elif issubclass(kind, (tuple, frozenset)):
        walk = _HOLDER
    elif issubclass(kind, _CONTAINERS):
        walk = _CONTAINER
    else:
        walk = _FOREIGN if foreign(kind) else _PROGRAM
    _WALKS[kind] = walk
    return walk


def _container(watch: Any, value: Any, how: Kind) -> tuple[Access, ...]:
    if isinstance(value, deque):
        return watch.whole(value, READ if how is READ else how)
    if how is READ:
        return watch.whole(value, LIST)
    keys = range(len(value) + 1) if isinstance(value, (list, bytearray)) else list(value)
    if how is WRITE:
        return watch.structural(value, keys)
    base = watch.whole(value, how)
    items = tuple(Access(one.obj, how) for one in watch.structural(value, keys)[:-1])
    return base + items


def new_attribute(watch: Any, obj: Any, name: str | None) -> tuple[Access, ...]:
    """What else a write of attribute ``name`` of ``obj`` (None: a deletion) touches: where it adds the name to the
    object's attributes, or removes one, the object's attributes as a whole (``Obj#1``), which a hand-off that reads
    all of them lists: code that pickles or copies an object sees an attribute another thread adds."""
    held = _attribute_dict(obj)
    if type(held) is not dict or (name is not None and name in held):
        return ()
    return watch.whole(obj, WRITE)


def _attribute_dict(value: Any) -> Any:
    try:
        return object.__getattribute__(value, "__dict__")
    except (AttributeError, TypeError):
        return None


def _attributes(value: Any) -> list[tuple[str, Any]]:
    """An instance's attributes as its ``__dict__`` and ``__slots__`` hold them, read without running its code."""
    out: list[tuple[str, Any]] = []
    held = _attribute_dict(value)
    if type(held) is dict:
        out.extend(held.items())
    for klass in type(value).__mro__:
        slots = klass.__dict__.get("__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            if name in ("__dict__", "__weakref__"):
                continue
            try:
                out.append((name, object.__getattribute__(value, name)))
            except AttributeError:
                pass
    return out


def _added(watch: Any, before: list[Any], label: str) -> tuple[Access, ...]:
    """The keys and attributes a callee that may change what it was handed added to it: written."""
    out: list[Access] = []
    for value, what, keys in before:
        if what is None:
            new = [k for k in value if k not in keys]
            if new:
                out.extend(watch.structural(value, new))
        else:
            for name, _inner in _attributes(value):
                if name not in keys:
                    found = watch.attribute(value, name, WRITE, write=True)
                    if found:
                        out.extend(found)
    return tuple(a._replace(via=label) for a in out)
