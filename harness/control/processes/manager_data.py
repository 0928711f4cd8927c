"""The data a ``multiprocessing.Manager`` serves (``dict()``, ``list()``, ``Value()``, ``Namespace()``), as models
the parent serves: every operation is one scheduling point with the accesses of plain memory, as the parent's
watched dicts and lists record them (an item ``mgr.dict#1['n']``, the entries as a whole ``mgr.dict#1``).

Why one point per operation: the real manager's server runs each call whole (one request, one answer), so
``d["n"] += 1`` is a read and a write with anything of another process in between, and no finer. Why pickles: the
server holds its own copies; what a caller gets is a copy and what it stores is copied, so mutating a value read
from the proxy changes nothing in it (``d["k"].append(1)`` is lost, as with the real one).

A structural change declares what it may do (the item, and the entries as a whole) and, once it has run, narrows
to what it did (an existing key set: the item, and the entries as ``ENTRY``), as the fake filesystem's mkdir does.
"""

from __future__ import annotations

from typing import Any

from racecheck.control.memory_discovery import PLAIN
from racecheck.control.memory_hooks import no_items
from racecheck.control.processes.link import routed
from racecheck.control.processes.models import Served, calling_process, dumps, loads
from racecheck.runtime.access import ENTRY, LIST, READ, WRITE, Access, memory
from racecheck.runtime.steps import ObjKind
from racecheck.sync.primitive import Primitive

__racecheck_engine__ = True

_PLAIN_KEYS = (str, int, float, bool, bytes, type(None))
_MISSING = object()


def _key_text(key: Any) -> str:
    """A key as the trace names it: its repr where that is what equality means, else its type (never an address)."""
    if type(key) in _PLAIN_KEYS or (type(key) is tuple and all(type(k) in _PLAIN_KEYS for k in key)):
        return repr(key)
    return f"<{type(key).__name__}>"


class _Container(Served, Primitive):
    """What the served dict and list share: the per-item objects, memoised, and the whole's accesses."""

    _obj_kind = ObjKind.MEMORY

    def _accesses(self) -> None:
        self._items_memo: dict[Any, Access] = {}
        self._list = (Access(self._obj, LIST),)
        self._whole_write = (Access(self._obj, WRITE),)
        self._entry = Access(self._obj, ENTRY)

    def _item(self, key: Any, kind: Any) -> Access:
        memo = (_key_text(key), kind)
        found = self._items_memo.get(memo)
        if found is None:
            found = self._items_memo[memo] = Access(memory(f"{self._name}[{memo[0]}]"), kind)
        return found

    def _copy(self, value: Any) -> Any:
        return loads(self._run, dumps(self._run, value))

    def _point(self, op: str, access: tuple) -> None:
        self._run.schedule(f"{op} {self._name}", access=access, skip=1)

    def __repr__(self) -> str:
        return f"<racecheck {getattr(self, '_name', None) or self.mid}>"


class ManagedDict(_Container):
    """``Manager().dict()``: items kept as pickles; reads of a key conflict with writes of that key and with
    insertions and removals (the entries), a listing with every change."""

    _kind = "mgr.dict"

    def __init__(self, run: Any, *args: Any, **kwargs: Any) -> None:
        Primitive.__init__(self, run)
        args, kwargs = loads(run, dumps(run, (args, kwargs)))
        self._data: dict[Any, bytes] = {key: dumps(run, value) for key, value in dict(*args, **kwargs).items()}
        self.enrol(run, self._name)

    def _read(self, key: Any) -> None:
        self._run.schedule(f"read {self._name}[{_key_text(key)}]", access=(self._item(key, READ),), skip=1)

    def _change(self, verb: str, key: Any) -> bool:
        """A point that may add or remove ``key``; whether the key was there once it runs."""
        self._run.schedule(f"{verb} {self._name}[{_key_text(key)}]",
                           access=(self._item(key, WRITE), *self._whole_write), skip=1)
        return key in self._data

    def _all(self, kind: Any) -> tuple:
        return (*(self._whole_write if kind is WRITE else self._list), *(self._item(k, kind) for k in self._data))

    @routed
    def __getitem__(self, key: Any) -> Any:
        self._read(key)
        return loads(self._run, self._data[key])

    @routed
    def get(self, key: Any, default: Any = None) -> Any:
        self._read(key)
        data = self._data.get(key, _MISSING)
        return default if data is _MISSING else loads(self._run, data)

    @routed
    def __contains__(self, key: Any) -> bool:
        self._read(key)
        return key in self._data

    @routed
    def __setitem__(self, key: Any, value: Any) -> None:
        data = dumps(self._run, value)
        key = self._copy(key)
        if self._change("write", key):
            self._run.narrow((self._item(key, WRITE), self._entry))
        self._data[key] = data

    @routed
    def setdefault(self, key: Any, default: Any = None) -> Any:
        data = dumps(self._run, default)
        key = self._copy(key)
        if self._change("setdefault", key):
            self._run.narrow((self._item(key, READ),))
        return loads(self._run, self._data.setdefault(key, data))

    @routed
    def __delitem__(self, key: Any) -> None:
        if not self._change("delete", key):
            self._run.narrow((self._item(key, READ),))
        del self._data[key]

    @routed
    def pop(self, key: Any, *default: Any) -> Any:
        if not self._change("pop", key):
            self._run.narrow((self._item(key, READ),))
            if default:
                return default[0]
            raise KeyError(key)
        return loads(self._run, self._data.pop(key))

    @routed
    def popitem(self) -> tuple:
        self._point("popitem", self._all(WRITE))
        key, data = self._data.popitem()
        self._run.narrow((self._item(key, WRITE), *self._whole_write))
        return key, loads(self._run, data)

    @routed
    def update(self, *args: Any, **kwargs: Any) -> None:
        args, kwargs = loads(self._run, dumps(self._run, (args, kwargs)))
        new = dict(*args, **kwargs)
        self._point("update", (*(self._item(k, WRITE) for k in new), *self._whole_write))
        for key, value in new.items():
            self._data[key] = dumps(self._run, value)

    @routed
    def clear(self) -> None:
        self._point("clear", self._all(WRITE))
        self._data.clear()

    @routed
    def __len__(self) -> int:
        self._point("len", self._list)
        return len(self._data)

    @routed
    def keys(self) -> list:
        self._point("keys", self._list)
        return [self._copy(key) for key in self._data]

    @routed
    def __iter__(self) -> Any:
        if calling_process(self._run) != "P0":
            # CPython's DictProxy answers iteration with a new proxy, which a process without the manager object
            # (every child) cannot make (python/cpython#99595, open for 3.11-3.13): the real one fails so in a child,
            # and so does this one
            raise AttributeError("'NoneType' object has no attribute '_registry' (a manager dict iterated in a "
                                 "child process: use list(d.keys()))")
        return iter(self.keys.__wrapped__(self))

    @routed
    def values(self) -> list:
        self._point("values", self._all(READ))
        return [loads(self._run, data) for data in self._data.values()]

    @routed
    def items(self) -> list:
        self._point("items", self._all(READ))
        return [(self._copy(key), loads(self._run, data)) for key, data in self._data.items()]

    @routed
    def copy(self) -> dict:
        return dict(self.items.__wrapped__(self))

    _getvalue = copy

    @routed
    def __str__(self) -> str:
        return str(self.copy.__wrapped__(self))


class ManagedList(_Container):
    """``Manager().list()``: an item read or set is the item's access; anything that moves items (an insertion, a
    removal, a sort) writes every item and the entries; an append or extend is an atomic addition, as
    ``list.append`` on a watched list is (two of them are no race: neither is lost)."""

    _kind = "mgr.list"

    def __init__(self, run: Any, sequence: Any = ()) -> None:
        Primitive.__init__(self, run)
        self._data: list[bytes] = [dumps(run, item) for item in loads(run, dumps(run, list(sequence)))]
        self.enrol(run, self._name)

    def _index(self, index: Any) -> Any:
        """An int index as a position (negative ones counted from the end), else None: a slice is the whole."""
        if isinstance(index, int) and -len(self._data) <= index < len(self._data):
            return index % len(self._data)
        return None

    def _moves(self, op: str) -> None:
        self._point(op, (*(self._item(i, WRITE) for i in range(len(self._data))), *self._whole_write))

    @routed
    def __getitem__(self, index: Any) -> Any:
        at = self._index(index)
        if at is None:
            self._point("read", self._list)
            if isinstance(index, slice):
                return [loads(self._run, data) for data in self._data[index]]
            return self._data[index]  # out of range, or not an index: raises as the real one does
        self._run.schedule(f"read {self._name}[{at}]", access=(self._item(at, READ),), skip=1)
        return loads(self._run, self._data[at])

    @routed
    def __setitem__(self, index: Any, value: Any) -> None:
        at = self._index(index)
        if at is None:
            if isinstance(index, slice):
                items = [dumps(self._run, item) for item in loads(self._run, dumps(self._run, list(value)))]
                self._moves("write")
                self._data[index] = items
                return
            self._point("write", self._list)
            self._data[index] = b""  # raises as the real one does
            return
        data = dumps(self._run, value)
        self._run.schedule(f"write {self._name}[{at}]", access=(self._item(at, WRITE), self._entry), skip=1)
        self._data[at] = data

    @routed
    def __delitem__(self, index: Any) -> None:
        self._moves("delete")
        del self._data[index]

    @routed
    def append(self, value: Any) -> None:
        data = dumps(self._run, value)
        self._point("append", (self._item(len(self._data), WRITE), *self._whole_write))
        self._run.memory_steps.atomic_addition()
        self._data.append(data)

    @routed
    def extend(self, values: Any) -> None:
        items = [dumps(self._run, item) for item in loads(self._run, dumps(self._run, list(values)))]
        self._point("extend", self._whole_write)
        self._run.memory_steps.atomic_addition()
        self._data.extend(items)

    def __iadd__(self, values: Any) -> ManagedList:
        self.extend(values)
        return self

    @routed
    def insert(self, index: int, value: Any) -> None:
        data = dumps(self._run, value)
        self._moves("insert")
        self._data.insert(index, data)

    @routed
    def pop(self, index: int = -1) -> Any:
        self._moves("pop")
        return loads(self._run, self._data.pop(index))

    @routed
    def remove(self, value: Any) -> None:
        self._moves("remove")
        del self._data[self._values().index(value)]

    @routed
    def reverse(self) -> None:
        self._moves("reverse")
        self._data.reverse()

    @routed
    def sort(self, key: Any = None, reverse: bool = False) -> None:
        self._moves("sort")
        values = self._values()
        values.sort(key=key, reverse=reverse)
        self._data = [dumps(self._run, value) for value in values]

    def _values(self) -> list:
        return [loads(self._run, data) for data in self._data]

    @routed
    def index(self, value: Any, *bounds: int) -> int:
        self._point("index", self._list)
        return self._values().index(value, *bounds)

    @routed
    def count(self, value: Any) -> int:
        self._point("count", self._list)
        return self._values().count(value)

    @routed
    def __contains__(self, value: Any) -> bool:
        self._point("contains", self._list)
        return value in self._values()

    @routed
    def __len__(self) -> int:
        self._point("len", self._list)
        return len(self._data)

    @routed
    def _getvalue(self) -> list:
        self._point("read", self._list)
        return self._values()

    def __iter__(self) -> Any:
        return iter(self._getvalue())

    def __add__(self, other: Any) -> list:
        return self._getvalue() + other

    def __mul__(self, times: int) -> list:
        return self._getvalue() * times

    def __str__(self) -> str:
        return str(self._getvalue())


class ManagedValue(Served, Primitive):
    """``Manager().Value(typecode, value)``: the value kept as the server keeps it (the typecode is not applied,
    as the real server does not), each ``get``/``set`` (``.value``) a point on plain memory."""

    _kind = "mgr.Value"
    _obj_kind = ObjKind.MEMORY

    def __init__(self, run: Any, typecode: Any, value: Any, lock: Any = True) -> None:
        Primitive.__init__(self, run)
        self._typecode = typecode
        self._data = dumps(run, value)
        self.enrol(run, self._name)

    def _accesses(self) -> None:
        self._read, self._write = (Access(self._obj, READ),), (Access(self._obj, WRITE),)

    @routed
    def get(self) -> Any:
        self._run.schedule(f"read {self._name}", access=self._read, skip=1)
        return loads(self._run, self._data)

    @routed
    def set(self, value: Any) -> None:
        data = dumps(self._run, value)
        self._run.schedule(f"write {self._name}", access=self._write, skip=1)
        self._data = data

    value = property(lambda self: self.get(), lambda self, value: self.set(value))

    def __repr__(self) -> str:
        return f"<racecheck {getattr(self, '_name', None) or self.mid}>"


class ManagedNamespace(Served, Primitive):
    """``Manager().Namespace(**attrs)``: each public attribute a piece of plain memory (``mgr.Namespace#1.x``);
    names that begin with an underscore are the proxy's own, as with the real proxy."""

    _kind = "mgr.Namespace"
    _obj_kind = ObjKind.MEMORY

    def __init__(self, run: Any, **attrs: Any) -> None:
        Primitive.__init__(self, run)
        object.__setattr__(self, "_attrs", {key: dumps(run, value) for key, value in attrs.items()})
        self.enrol(run, self._name)

    def _attr(self, name: str, kind: Any) -> tuple:
        return (Access(memory(f"{self._name}.{name}"), kind),)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name == "mid":
            raise AttributeError(name)
        return self.get_attr(name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name.startswith("_") or name == "mid":
            object.__setattr__(self, name, value)
        else:
            self.set_attr(name, value)

    def __delattr__(self, name: str) -> None:
        if name.startswith("_") or name == "mid":
            object.__delattr__(self, name)
        else:
            self.del_attr(name)

    @routed
    def get_attr(self, name: str) -> Any:
        self._run.schedule(f"read {self._name}.{name}", access=self._attr(name, READ), skip=1)
        if name not in self._attrs:
            raise AttributeError(f"'Namespace' object has no attribute '{name}'")
        return loads(self._run, self._attrs[name])

    @routed
    def set_attr(self, name: str, value: Any) -> None:
        data = dumps(self._run, value)
        self._run.schedule(f"write {self._name}.{name}", access=self._attr(name, WRITE), skip=1)
        self._attrs[name] = data

    @routed
    def del_attr(self, name: str) -> None:
        self._run.schedule(f"delete {self._name}.{name}", access=self._attr(name, WRITE), skip=1)
        if name not in self._attrs:
            raise AttributeError(name)
        del self._attrs[name]

    def __repr__(self) -> str:
        return f"<racecheck {self.__dict__.get('_name') or self.__dict__.get('mid')}>"


# What the memory hooks would record beside the points above, under the stand-in's own name: their items, and a
# namespace's attributes (its own points); the others' attributes are methods and properties.
for _served in (ManagedDict, ManagedList):
    no_items(_served)
PLAIN.add(ManagedNamespace)
