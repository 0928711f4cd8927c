"""``Manager().Array(typecode, sequence)`` served like the manager's ``list()`` (``manager_data``): the server's
``array.array``, held by the parent, each call of its proxy one point with plain-memory accesses.

What the real proxy (``ArrayProxy``) offers is ``len``, item and slice reads and writes, nothing else (iteration
goes through ``__getitem__`` until ``IndexError``, a call each, as here); its items are numbers (or characters),
copied across as the server's answers are. An item read or written is the item's access (``mgr.Array#1[0]``), so
``a[0] += 1`` from two children is a lost update; a slice is every item (written) or the whole (read), a length
the whole, as a list's.
"""

from __future__ import annotations

import array
from typing import Any

from racecheck.control.memory_hooks import no_items
from racecheck.control.processes.link import routed
from racecheck.control.processes.models import Served
from racecheck.runtime.access import LIST, READ, WRITE, Access, memory
from racecheck.runtime.steps import ObjKind
from racecheck.sync.primitive import Primitive

__racecheck_engine__ = True


class ManagedArray(Served, Primitive):
    """``Manager().Array()``: the array in the parent, every proxy call one point."""

    _kind = "mgr.Array"
    _obj_kind = ObjKind.MEMORY

    def __init__(self, run: Any, typecode: str, sequence: Any, lock: Any = True) -> None:
        Primitive.__init__(self, run)
        self._data = array.array(typecode, sequence)  # raises as the real server does (a bad typecode, a str)
        self.enrol(run, self._name)

    def _accesses(self) -> None:
        self._items: dict[tuple[int, Any], tuple[Access, ...]] = {}
        self._whole = (Access(self._obj, LIST),)

    def _item(self, at: int, kind: Any) -> tuple[Access, ...]:
        found = self._items.get((at, kind))
        if found is None:
            found = self._items[at, kind] = (Access(memory(f"{self._name}[{at}]"), kind),)
        return found

    def _at(self, index: Any) -> int | None:
        """An int index in range as a position, else None (a slice, or one that raises)."""
        if isinstance(index, int) and -len(self._data) <= index < len(self._data):
            return index % len(self._data)
        return None

    @routed
    def __len__(self) -> int:
        self._run.schedule(f"len {self._name}", access=self._whole)
        return len(self._data)

    @routed
    def __getitem__(self, index: Any) -> Any:
        at = self._at(index)
        if at is None:
            self._run.schedule(f"read {self._name}", access=self._whole)
            return self._data[index]  # a slice's copy, or the real IndexError/TypeError
        self._run.schedule(f"read {self._name}[{at}]", access=self._item(at, READ))
        return self._data[at]

    @routed
    def __setitem__(self, index: Any, value: Any) -> None:
        at = self._at(index)
        if at is None:
            every = tuple(a for i in range(len(self._data)) for a in self._item(i, WRITE))
            self._run.schedule(f"write {self._name}", access=every if isinstance(index, slice) else self._whole)
            self._data[index] = value  # raises as the real one does (a slice of another length, a wrong type)
            return
        self._run.schedule(f"write {self._name}[{at}]", access=self._item(at, WRITE))
        self._data[at] = value

    @routed
    def __str__(self) -> str:
        self._run.schedule(f"read {self._name}", access=self._whole)
        return str(self._data)

    def __repr__(self) -> str:
        return f"<racecheck {self.__dict__.get('_name') or self.__dict__.get('mid')}>"


no_items(ManagedArray)  # its items are its own points: the memory hooks would record each again
