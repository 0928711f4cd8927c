"""What one run's memory hooks know (``Watch``): the logical name of every object they saw, and the accesses they
build for the dependency relation (``racecheck.runtime.access.memory``: objects of kind ``ObjKind.MEMORY``).

An object is named by its type and the order in which the run first touched an object of that type
(``Counter#1``), never by its address: the same schedule names the same objects in every process, so traces,
racing pairs and interleaving counts are the same everywhere. A name's piece of memory follows it: an attribute
``Counter#1.value``, an item ``dict#2['k']`` (the key as its repr when that is what equality means, else the key
object's own name), the entries of a container ``list#3`` (what ``len`` and iteration read and every insertion or
change of an item writes), a module global ``global pkg.mod.x``, a closure cell ``cell outer.count#1``.

Where an attribute lives decides its name: an attribute a class defines as data (a class-level default, a
counter kept on the class) is the class's, ``Config.retries``, until the instance sets its own; methods,
properties and other descriptors are the class's code, not memory, and reading them is no access (their code's
own accesses are seen where it runs). A ``threading.local`` keeps one copy per thread: not shared, never named.
"""

from __future__ import annotations

import re
import types
import weakref
from _thread import _local as _thread_local
from collections import deque
from typing import Any

from racecheck import runtime
from racecheck.runtime.access import ENTRY, LIST, READ, WRITE, Access, memory

__racecheck_engine__ = True

_INSTANCE, _SKIP, _PER_THREAD = "instance", "skip", "per thread"
# Descriptors on a class that are code, not data: reading one runs code (whose own accesses are seen) or returns
# a bound method.
_CODE_DESCRIPTORS = (
    types.FunctionType, staticmethod, classmethod, property, types.BuiltinFunctionType, types.MethodDescriptorType,
    types.WrapperDescriptorType, types.GetSetDescriptorType, types.MethodWrapperType, types.ClassMethodDescriptorType,
)
# (type, attribute) -> where it lives: _INSTANCE, _SKIP, or the class that holds it as data
_WHERE: dict[tuple[type, str], Any] = {}
# attribute -> the types _WHERE holds it for: a class attribute's write forgets those without a scan of all of
# _WHERE (thousands of entries once a library is loaded; a write of a class attribute is made every few schedules)
_WHERE_TYPES: dict[str, list[type]] = {}


def where_attribute(cls: type, name: str) -> Any:
    """Where ``name`` lives for instances of ``cls``: in the instance (``"instance"``), nowhere worth naming (a
    method, a property: ``"skip"``), in a copy per thread (a ``threading.local``: ``"per thread"``), or as data on
    a class of the MRO (that class). Remembered for the classes a module defines; a class made by a function call
    (``<locals>`` in its name: a new one at every call, in every run) is looked at again each time."""
    key = (cls, name)
    found = _WHERE.get(key) or _LOCAL_WHERE.get(key)
    if found is None:
        found = _where(cls, name)
        if "<locals>" not in getattr(cls, "__qualname__", "<locals>"):
            _WHERE[key] = found
            _WHERE_TYPES.setdefault(name, []).append(cls)
        else:
            _LOCAL_WHERE[key] = found  # until the run ends (``forget_local_classes``)
    return found


_LOCAL_WHERE: dict[tuple[type, str], Any] = {}


def forget_local_classes() -> None:
    """A run ended: what ``where_attribute`` knew of the classes made during it goes (they would stay alive)."""
    _LOCAL_WHERE.clear()


def _where(cls: type, name: str) -> Any:
    if issubclass(cls, _thread_local):
        return _PER_THREAD
    for klass in getattr(cls, "__mro__", (cls,)):
        held = klass.__dict__.get(name, _MISSING)
        if held is _MISSING:
            continue
        if isinstance(held, types.MemberDescriptorType) or type(held).__name__ == "cached_property":
            return _INSTANCE  # a __slots__ entry, or a value cached in the instance: per-instance data
        if isinstance(held, _CODE_DESCRIPTORS):
            return _SKIP
        return klass
    return _INSTANCE


def forget_class_attribute(name: str) -> None:
    """A class gained or changed ``name``: what ``where_attribute`` cached about it no longer holds."""
    for cls in _WHERE_TYPES.pop(name, ()):
        _WHERE.pop((cls, name), None)


_MISSING = object()
_MODULE = types.ModuleType  # module globals: a name a hook looks up at every access costs a bytecode less
_HEX_DIGEST = re.compile(r"[0-9a-f]{16,}|[0-9A-F]{16,}")
_SIMPLE_KEYS = (str, int, float, bool, bytes, type(None), complex)


def _identity_equality(value: Any) -> bool:
    eq = getattr(type(value), "__eq__", None)
    return eq is object.__eq__ or isinstance(value, (type, types.ModuleType, types.FunctionType))


class _Named(weakref.ref):
    """A weak reference to a named object that knows the address it was named at."""

    __slots__ = ("key",)


def _forgetter(watch: weakref.ref) -> Any:
    def forget(named: _Named) -> None:
        alive = watch()
        if alive is not None:
            alive.forget(named)

    return forget


class Watch:
    """One run's view of plain memory: object names and the accesses built on them.

    A name does not keep its object alive where the object can be referred to weakly (instances of most classes):
    it dies when the program drops it, inside the run, as it would uncontrolled, and its finalizer's accesses are
    made there in every run, whichever code named it first (a sampled run whose unwatched code made an object and a
    rerun watching everything agree on where it dies). Its name and the accesses built on it are forgotten then,
    before its address can be another object's. The rest (dicts, lists, tuples: no finalizers of their own) are
    kept until the run ends, so that no address of theirs is reused within it.
    """

    __slots__ = ("names", "counts", "memo", "lazy", "aliases", "walking", "home", "on_death", "__weakref__")

    def __init__(self, home: int = 0) -> None:
        # the thread whose objects are named without it (``dict#1``): the test's T0, or a child's first thread
        # (``control.processes.child_memory``), whose names its process label then prefixes (``P1.dict#1``)
        self.home = home
        # the callback of every weak name: holds this watch weakly, so that names -> reference -> callback is no
        # cycle and a run's watch goes with its run, not at the next collection
        self.on_death = _forgetter(weakref.ref(self))
        self.names: dict[int, tuple[Any, str]] = {}  # id -> (object, its name in this run)
        self.counts: dict[str, int] = {}
        self.memo: dict[tuple[Any, ...], tuple[Access, ...]] = {}
        # lazy iterators and views over a container (``iter(x)``, ``enumerate(x)``, ``d.items()``): id -> (the
        # iterator, the containers it reads when advanced)
        self.lazy: dict[int, tuple[Any, tuple[Any, ...]]] = {}
        # an object's own attribute dict handed to the program (``vars(obj)``): id -> (the dict, the object), so
        # that its items are the object's attributes and its entries the object's attributes as a whole
        self.aliases: dict[int, tuple[Any, Any]] = {}
        # the name of the object a hand-off's walk started from while it walks what that object reaches
        # (``control.handoff.accesses``): objects first met there are counted under it, so how far a walk reaches
        # (which can depend on what the process did before: caches, objects not yet collected) never shifts the
        # names of the objects the program itself meets
        self.walking: str | None = None

    # ----- names ------------------------------------------------------------------------------------------------

    def name_of(self, obj: Any) -> str:
        """The run's logical name of ``obj``: ``Type#n``, the n-th object of its type the test's own thread met,
        or ``Type@T2#n``, the n-th one thread T2 met first. Counted per thread, a name is the same in every
        schedule equivalent to this one (the threads' own orders are), except for an object two threads could
        each meet first: such a name can tell two equivalent schedules apart in ``result.interleavings``, never
        hide one."""
        found = self.names.get(id(obj))
        if found is not None:
            return found[1]
        if isinstance(obj, type):
            name = f"{obj.__qualname__}"
        elif isinstance(obj, types.ModuleType):
            name = f"module {obj.__name__}"
        else:
            me = runtime.thread_state.thread
            tid = me.tid if me is not None else 0
            kind = type(obj).__name__ if not tid or tid == self.home else f"{type(obj).__name__}@T{tid}"
            within = "" if self.walking is None else f" in {self.walking}"
            number = self.counts.get(kind + within, 0) + 1
            self.counts[kind + within] = number
            name = f"{kind}#{number}{within}"
        key = id(obj)
        if type(obj).__weakrefoffset__:
            named = _Named(obj, self.on_death)
            named.key = key
            self.names[key] = (named, name)
        else:
            self.names[key] = (obj, name)
        return name

    def forget(self, named: _Named) -> None:
        """A named object died (its weak reference's callback): its address may be another object's next, so its
        name goes, and the memo (a cache, built again for what is alive: a few deaths a schedule, so a whole clear
        costs less than an index per address kept at every miss)."""
        found = self.names.get(named.key)
        if found is not None and found[0] is named:
            del self.names[named.key]
            self.memo.clear()

    def key_text(self, key: Any) -> str:
        """An item's key as a name: its repr where equal keys have equal reprs, else the key object's own name
        (identity is its equality), else its type (every key of that type one item: coarser, never less)."""
        kind = type(key)
        if kind is int and not -(1 << 40) < key < 1 << 40:
            return "<large int>"  # often an id(): a different number in every run, so one item for all of them
        if kind is str and len(key) >= 16 and _HEX_DIGEST.fullmatch(key):
            # a digest (fsspec's instance-cache token hashes values whose order follows the hash seed): another
            # text in every process, so one item for all of them, as a trace must read the same in any process
            return "<hex digest>"
        if kind in _SIMPLE_KEYS:
            text = repr(key)
            return text if len(text) <= 64 else f"{text[:60]}...{len(text)}"
        if kind is tuple:
            return "(" + ", ".join(self.key_text(k) for k in key) + ("," if len(key) == 1 else "") + ")"
        if _identity_equality(key):
            return self.name_of(key)
        text = repr(key)
        if " at 0x" in text or len(text) > 64:
            return f"<{kind.__name__}>"
        return text

    # ----- accesses ---------------------------------------------------------------------------------------------

    def attribute(self, obj: Any, name: str, kind: str, write: bool = False) -> tuple[Access, ...] | None:
        """An access to attribute ``name`` of ``obj`` (None: nothing to watch: a method, a property, a module
        global that nothing rebinds)."""
        cls = type(obj)
        if cls is _MODULE or isinstance(obj, _MODULE):  # a module, a facade, a lazy module
            module = obj.__name__
            return self.global_(module, name, kind) if write or name in rebound_of(module) else None
        if isinstance(obj, type):
            if write:
                forget_class_attribute(name)
            return self._named(obj, name, kind)
        where = where_attribute(cls, name)
        if (where is _SKIP and not write) or where is _PER_THREAD:
            return None
        if where is not _INSTANCE and where is not _SKIP and not write:
            held = getattr(obj, "__dict__", None)
            if held is None or name not in held:
                return self._named(where, name, kind)
        return self._named(obj, name, kind)

    def read_attribute(self, obj: Any, name: str) -> tuple[tuple[Access, ...] | None, tuple[Access, ...] | None]:
        """A read of attribute ``name`` of ``obj``, as ``(declared, None)`` where what it touches depends on the
        state it meets (both places the attribute may be held: the instance, or its class until the instance sets
        its own; ``attribute`` tells which once the point is passed), else ``(None, attribute(obj, name, READ))``.
        One call for the memory hooks' most frequent access, where two looked the attribute's home up twice."""
        cls = type(obj)
        if cls is _MODULE or isinstance(obj, _MODULE):  # a module, a facade, a lazy module
            module = obj.__name__
            return None, (self.global_(module, name, READ) if name in rebound_of(module) else None)
        if isinstance(obj, type):
            return None, self._named(obj, name, READ)
        where = where_attribute(cls, name)
        if where is _INSTANCE:
            return None, self._named(obj, name, READ)
        if where is _SKIP or where is _PER_THREAD:
            return None, None
        return self._named(obj, name, READ) + self._named(where, name, READ), None

    def _named(self, owner: Any, name: str, kind: str) -> tuple[Access, ...]:
        key = (id(owner), name, kind)
        found = self.memo.get(key)
        if found is None:
            found = self.memo[key] = (Access(memory(f"{self.name_of(owner)}.{name}"), kind),)
        return found

    def global_(self, module: str, name: str, kind: str) -> tuple[Access, ...]:
        key = (module, name, kind)
        found = self.memo.get(key)
        if found is None:
            found = self.memo[key] = (Access(memory(f"global {module}.{name}"), kind),)
        return found

    def cell(self, cell: Any, where: str, name: str, kind: str) -> tuple[Access, ...]:
        key = (id(cell), kind)
        found = self.memo.get(key)
        if found is None:
            entry = self.names.get(id(cell))
            if entry is None:
                me = runtime.thread_state.thread
                tid = me.tid if me is not None else 0
                label = f"cell {where}.{name}" if not tid else f"cell {where}.{name}@T{tid}"
                number = self.counts.get(label, 0) + 1
                self.counts[label] = number
                entry = self.names[id(cell)] = (cell, f"{label}#{number}")
            found = self.memo[key] = (Access(memory(entry[1]), kind),)
        return found

    def item(self, container: Any, key: Any, kind: str) -> tuple[Access, ...]:
        """One item read (``READ``), or its value changed in place (``WRITE``: the item, and the entries as
        ``ENTRY``, which changes of other items commute with and a listing does not)."""
        if self.aliases and id(container) in self.aliases:
            return self.alias_item(container, key, kind)
        try:
            memo_key = (id(container), key, kind)
            found = self.memo.get(memo_key)
        except TypeError:  # an unhashable key (a slice, a list): the whole container
            return self.whole(container, LIST if kind == READ else WRITE)
        if found is None:
            base = self.name_of(container)
            found = (Access(memory(f"{base}[{self.key_text(key)}]"), kind),)
            if kind != READ:
                found += (Access(memory(base), ENTRY),)
            self.memo[memo_key] = found
        return found

    def structural(self, container: Any, keys: Any) -> tuple[Access, ...]:
        """Items inserted, removed or moved (``append``, ``pop``, a new key, ``sort``): each item, and the entries
        as a whole (``WRITE``: the order and the length change, so two such changes do not commute either)."""
        if self.aliases and id(container) in self.aliases:
            owner = self.aliases[id(container)][1]
            out: tuple[Access, ...] = ()
            for key in keys:
                out += self.alias_item(container, key, WRITE)
            return out + self._named_whole(owner, WRITE)
        base = self.name_of(container)
        out = [Access(memory(f"{base}[{self.key_text(key)}]"), WRITE) for key in keys]
        out.append(Access(memory(base), WRITE))
        return tuple(dict.fromkeys(out))

    def whole(self, container: Any, kind: str) -> tuple[Access, ...]:
        """The container as a whole: its entries listed (``len``, iteration: ``LIST``), changed all at once
        (``WRITE``), or for a deque, whose positions shift at both ends, every read (``READ``) of it."""
        if self.aliases and id(container) in self.aliases:  # an object's attributes: each of them, and the whole
            owner = self.aliases[id(container)][1]
            out: tuple[Access, ...] = ()
            for name in list(container):
                if isinstance(name, str):
                    out += self._named(owner, name, READ if kind == LIST else kind)
            return out + self._named_whole(owner, kind)
        memo_key = (id(container), kind, None)
        found = self.memo.get(memo_key)
        if found is None:
            found = self.memo[memo_key] = (Access(memory(self.name_of(container)), kind),)
        return found

    def alias_item(self, container: Any, key: Any, kind: str) -> tuple[Access, ...]:
        """An item of an object's own attribute dict: that attribute of the object."""
        owner = self.aliases[id(container)][1]
        if not isinstance(key, str):
            return self._named_whole(owner, LIST if kind == READ else WRITE)
        return self._named(owner, key, kind)

    def _named_whole(self, owner: Any, kind: str) -> tuple[Access, ...]:
        memo_key = (id(owner), kind, None)
        found = self.memo.get(memo_key)
        if found is None:
            found = self.memo[memo_key] = (Access(memory(self.name_of(owner)), kind),)
        return found

    def alias(self, attributes: dict, owner: Any) -> None:
        """``attributes`` is ``owner``'s own attribute dict, now in the program's hands (``vars(owner)``)."""
        self.aliases[id(attributes)] = (attributes, owner)
        self.names[id(attributes)] = (attributes, self.name_of(owner))

    def sources(self, value: Any) -> tuple[Any, ...]:
        """The containers iterating ``value`` reads: itself if it is one, or what a lazy iterator over containers
        was made from."""
        found = self.lazy.get(id(value))
        if found is not None and found[0] is value:
            return found[1]
        return (value,) if type(value) in WATCHED_CONTAINERS or isinstance(value, _CONTAINER_BASES) else ()

    def remember_lazy(self, lazy: Any, containers: tuple[Any, ...]) -> None:
        if containers:
            self.lazy[id(lazy)] = (lazy, containers)


# The mutable builtin containers whose items the hooks name (subclasses too: defaultdict, OrderedDict, Counter).
_CONTAINER_BASES: tuple[type, ...] = (dict, list, set, bytearray, deque)
WATCHED_CONTAINERS: set[type] = {dict, list, set, bytearray, deque}

# module name -> the globals its functions rebind (``racecheck.control.memory_install`` fills it)
_REBOUND: dict[str, frozenset[str]] = {}
_EMPTY: frozenset[str] = frozenset()


def rebound_of(module: str) -> frozenset[str]:
    return _REBOUND.get(module, _EMPTY)


def set_rebound(module: str, names: frozenset[str]) -> None:
    _REBOUND[module] = names
