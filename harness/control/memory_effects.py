"""What a builtin container's method, or a builtin function given a container, reads and writes: the table the
memory hooks consult when the rewritten code calls one (``racecheck.control.memory_hooks``).

A container is its items, named by key (``Watch.item``: ``dict#1['a']``, ``list#2[0]``), and its entries as a whole
(``dict#1``). Reading an item reads that item only, so two threads reading or changing different keys commute.
Changing the value of an item that is there also marks the entries (``ENTRY``), which a listing (``len``,
iteration, ``==``: ``LIST``) reads and other such changes commute with. Inserting, removing or moving items
(a new key, ``append``, ``pop``, ``insert``, ``sort``) writes every item concerned and the entries as a whole
(``WRITE``): the length and the order change, so such changes do not commute with each other, nor with a listing,
nor with a change in place (``Watch.structural``). Whether a key is there is read at the call, before it runs: in
the state where the call happens, that is what it does. A deque is one piece of memory: every read reads it,
every change writes it. A method not in the table reads the whole container. An argument that is an iterator is
turned into a list first (the call would have consumed it anyway), so that the keys it brings can be known.
"""

from __future__ import annotations

import types
from collections import deque
from typing import Any

from racecheck.control.memory_names import Watch
from racecheck.runtime.access import LIST, READ, WRITE, Access

__racecheck_engine__ = True

Effect = tuple[Access, ...]

_DICT_READ_KEY = frozenset({"get", "__getitem__", "__contains__"})
_DICT_WRITE_KEY = frozenset({"setdefault", "pop", "__setitem__", "__delitem__"})
_LIST_READ = frozenset({"index", "count", "copy", "__contains__", "__len__", "__iter__", "__reversed__", "__getitem__"})
_SET_KEY_WRITE = frozenset({"add", "discard", "remove"})
_SET_KEYS_WRITE = frozenset({"update", "difference_update", "symmetric_difference_update", "__ior__", "__isub__",
                             "__ixor__"})
_SET_ALL_WRITE = frozenset({"pop", "clear", "intersection_update", "__iand__"})
_DEQUE_WRITE = frozenset({"append", "appendleft", "pop", "popleft", "extend", "extendleft", "rotate", "clear",
                          "remove", "insert", "reverse", "__setitem__", "__delitem__", "__iadd__", "__imul__"})
# Methods that hand back a lazy view or iterator over the container: reading happens when it is advanced.
LAZY_METHODS = frozenset({"keys", "values", "items", "__iter__", "__reversed__"})


# Additions CPython makes one atomic operation (one bytecode, under the GIL, no Python code run in between) when the
# items they add hash and compare in C: a second thread's addition is never lost nor torn by it, only ordered before or
# after it. Their arguments must be sequences already (an iterator runs Python code as it is consumed).
_ATOMIC_ADDITIONS = {
    list: frozenset({"append", "insert", "extend"}),
    deque: frozenset({"append", "appendleft", "extend", "extendleft"}),
    set: frozenset({"add", "update"}),
}


def _in_c(value: Any) -> bool:
    """Whether adding ``value`` to a set runs no Python code: its type hashes and compares in C."""
    kind = type(value)
    return not isinstance(getattr(kind, "__hash__", None), types.FunctionType) and not isinstance(
        getattr(kind, "__eq__", None), types.FunctionType)


def atomic_addition(container: Any, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Whether ``container.name(*args)`` is one atomic addition to a builtin list, deque or set (``append``,
    ``add``, ``extend`` of a sequence, ...): two of those in different threads are no data race whose order is
    all they leave open (docs/explore.md, "atomic additions")."""
    names = _ATOMIC_ADDITIONS.get(type(container))
    if names is None or name not in names or kwargs or not args:
        return False
    if name in ("extend", "extendleft", "update"):
        return len(args) == 1 and isinstance(args[0], (list, tuple, set, frozenset, deque)) and (
            type(container) is not set or all(_in_c(item) for item in args[0]))
    item = args[-1]
    return type(container) is not set or _in_c(item)


def materialized(args: tuple[Any, ...], position: int) -> tuple[Any, ...]:
    """``args`` with the one at ``position`` turned into a list when it is an iterator (consumed once: the effect
    must look at it before the call does)."""
    if len(args) <= position:
        return args
    value = args[position]
    if isinstance(value, (list, tuple, dict, set, frozenset, str, bytes, range, deque)) or hasattr(value, "keys"):
        return args
    return (*args[:position], list(value), *args[position + 1:])


def _keys_of(value: Any) -> list[Any]:
    """The keys an ``update``-like argument brings: a mapping's keys, or the first items of an iterable of pairs."""
    if hasattr(value, "keys"):
        return list(value.keys())
    out = []
    for pair in value:
        try:
            out.append(pair[0])
        except (TypeError, IndexError, KeyError):
            pass
    return out


def method_effect(watch: Watch, container: Any, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Effect:
    """What calling ``container.name(*args, **kwargs)`` touches."""
    if isinstance(container, dict):
        return _dict_effect(watch, container, name, args, kwargs)
    if isinstance(container, (list, bytearray)):
        return _list_effect(watch, container, name, args)
    if isinstance(container, (set, frozenset)):
        return _set_effect(watch, container, name, args)
    if isinstance(container, deque):
        return watch.whole(container, WRITE if name in _DEQUE_WRITE else READ)
    return watch.whole(container, LIST)


def _present(container: Any, key: Any) -> bool:
    try:
        return key in container
    except TypeError:
        return False


def _dict_effect(watch: Watch, d: dict, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Effect:
    if name in _DICT_READ_KEY and args:
        return watch.item(d, args[0], READ)
    if name == "__setitem__" and args:
        return watch.item(d, args[0], WRITE) if _present(d, args[0]) else watch.structural(d, args[:1])
    if name == "setdefault" and args:
        return watch.item(d, args[0], READ) if _present(d, args[0]) else watch.structural(d, args[:1])
    if name in ("pop", "__delitem__") and args:
        return watch.structural(d, args[:1]) if _present(d, args[0]) else watch.item(d, args[0], READ)
    if name == "popitem":
        return watch.structural(d, [next(reversed(d))]) if d else watch.whole(d, LIST)
    if name in ("update", "__ior__"):
        keys = [*(_keys_of(args[0]) if args else ()), *kwargs]
        if all(_present(d, key) for key in keys):
            out: Effect = ()
            for key in keys:
                out += watch.item(d, key, WRITE)
            return out
        return watch.structural(d, keys)
    if name == "clear":
        return watch.structural(d, list(d))
    return watch.whole(d, LIST)


def _index(n: int, i: Any) -> int | None:
    if not isinstance(i, int):
        return None
    return i + n if i < 0 else i


def _list_effect(watch: Watch, lst: Any, name: str, args: tuple[Any, ...]) -> Effect:
    n = len(lst)
    if name == "append":
        return watch.structural(lst, [n])
    if name in ("extend", "__iadd__"):
        more = len(args[0]) if args and hasattr(args[0], "__len__") else 0
        return watch.structural(lst, range(n, n + more)) + _reads_of(watch, args)
    if name == "insert" and args:
        at = _index(n, args[0])
        at = n if at is None else max(0, min(at, n))
        return watch.structural(lst, range(at, n + 1))
    if name == "pop":
        at = _index(n, args[0] if args else -1)
        if at is None or not 0 <= at < n:
            return watch.whole(lst, LIST)  # IndexError: it read the length
        return watch.structural(lst, range(at, n))
    if name == "remove" and args:
        for at, value in enumerate(lst):
            if value is args[0] or value == args[0]:
                return watch.structural(lst, range(at, n))
        return watch.whole(lst, LIST)  # ValueError: it read every item
    if name in ("clear", "sort", "reverse", "__imul__"):
        return watch.structural(lst, range(n))
    return watch.whole(lst, LIST)


def _set_effect(watch: Watch, s: Any, name: str, args: tuple[Any, ...]) -> Effect:
    if name == "__contains__" and args:
        return watch.item(s, args[0], READ)
    if name == "add" and args:
        return watch.item(s, args[0], READ) if _present(s, args[0]) else watch.structural(s, args[:1])
    if name in ("discard", "remove") and args:
        return watch.structural(s, args[:1]) if _present(s, args[0]) else watch.item(s, args[0], READ)
    if name in _SET_KEYS_WRITE:
        keys: list[Any] = []
        for other in args:
            keys.extend(other)
        return watch.structural(s, keys)
    if name in _SET_ALL_WRITE:
        return watch.structural(s, list(s))
    return watch.whole(s, LIST)


def _reads_of(watch: Watch, values: tuple[Any, ...]) -> Effect:
    """What reading each container among ``values`` whole touches (``extend(other)`` reads ``other``)."""
    out: Effect = ()
    for value in values:
        for source in watch.sources(value):
            out += watch.whole(source, READ if isinstance(source, deque) else LIST)
    return out


def reads_of(watch: Watch, values: tuple[Any, ...]) -> Effect:
    return _reads_of(watch, values)


def declared_effect(watch: Watch, container: Any, key: Any, write: bool) -> Effect:
    """What an access to ``container`` may touch, whatever state it meets (``Run.memory_point``): a keyed access to
    a dict or set names its key (as an insertion, the most it can do), any other the container whole."""
    if isinstance(container, (dict, set)) and key is not _NO_KEY:
        try:
            hash(key)
        except TypeError:
            return watch.whole(container, WRITE if write else LIST)
        return watch.structural(container, (key,)) if write else watch.item(container, key, READ)
    if isinstance(container, deque):
        return watch.whole(container, WRITE if write else READ)
    return watch.whole(container, WRITE if write else LIST)


_NO_KEY = object()
NO_KEY = _NO_KEY


def item_effect(watch: Watch, container: Any, key: Any, kind: str, delete: bool = False) -> Effect:
    """``container[key]`` read (``READ``), written (``WRITE``) or deleted (``delete``), as the method that does it
    (``__getitem__``, ``__setitem__``, ``__delitem__``) would; for a list, a negative index or one past the end also
    reads the length (the item it means depends on it), and a slice touches every item it covers."""
    if isinstance(container, deque):
        return watch.whole(container, READ if kind == READ else WRITE)
    if isinstance(container, dict):
        if kind == READ:
            return watch.item(container, key, READ)
        return _dict_effect(watch, container, "__delitem__" if delete else "__setitem__", (key,), {})
    if isinstance(container, (list, bytearray)):
        n = len(container)
        if isinstance(key, slice):
            if kind == READ:
                return watch.whole(container, LIST)
            start, _stop, _step = key.indices(n)
            return watch.structural(container, range(0 if key.step not in (None, 1) else start, n))
        at = _index(n, key)
        if at is None or not 0 <= at < n:
            return watch.whole(container, LIST)  # IndexError (or a bad index): it read the length
        if delete:
            return watch.structural(container, range(at, n))
        found = watch.item(container, at, kind)
        return found + watch.whole(container, LIST) if key < 0 else found
    return watch.item(container, key, kind)
