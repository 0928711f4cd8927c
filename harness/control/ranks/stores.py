"""The parent's model of ``torch.distributed``'s key-value stores (``TCPStore``, ``FileStore``, ``HashStore``) as the
ranks of a run use them: every operation is a point of the calling rank, and ``get``/``wait`` block (a predicate,
like a lock) until the keys exist, so a key nobody sets is a deadlock, never a 300-second timeout.

A ``TCPStore`` is named by its address and a ``FileStore`` by its path, so every rank that opens one reaches the
same model; a ``HashStore`` is its process's own. Values are bytes, as the real stores keep them; ``add`` keeps
the decimal text of the count. ``tests/ranks/test_stores.py`` holds the model against a real ``HashStore``.
"""

from __future__ import annotations

from typing import Any

from racecheck.control.processes.models import Served, calling_process
from racecheck.runtime import RunContract
from racecheck.runtime.access import READ, WAIT, WRITE, on
from racecheck.runtime.steps import Obj, ObjKind

__racecheck_engine__ = True

MID = "dist.stores"


def as_bytes(value: Any) -> bytes:
    if isinstance(value, str):
        return value.encode()
    return bytes(value)


class Store:
    """One store's keys: a synchronising object (a set publishes, a get takes what was set before it)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.data: dict[str, bytes] = {}
        obj = Obj(ObjKind.EVENT, name)
        self.read, self.write, self.wait = on(obj, READ), on(obj, WRITE), on(obj, WAIT)

    # What each operation does to the keys once its point is passed (the same code the differential test runs).

    def set(self, key: str, value: Any) -> None:
        self.data[key] = as_bytes(value)

    def get(self, key: str) -> bytes:
        return self.data[key]

    def add(self, key: str, amount: int) -> int:
        total = int(self.data.get(key, b"0")) + int(amount)
        self.data[key] = str(total).encode()
        return total

    def compare_set(self, key: str, expected: Any, desired: Any) -> bytes:
        expected, desired = as_bytes(expected), as_bytes(desired)
        current = self.data.get(key)
        if current is None:
            if expected:
                return expected
            self.data[key] = desired
            return desired
        if current == expected:
            self.data[key] = desired
            return desired
        return current

    def append(self, key: str, value: Any) -> None:
        self.data[key] = self.data.get(key, b"") + as_bytes(value)

    def delete_key(self, key: str) -> bool:
        return self.data.pop(key, None) is not None

    def check(self, keys: list[str]) -> bool:
        return all(key in self.data for key in keys)

    def num_keys(self) -> int:
        return len(self.data)


BLOCKING = {"get": lambda args: [args[0]], "wait": lambda args: list(args[0])}
READING = ("check", "num_keys")


class Stores(Served):
    """Every store of a run, by name."""

    def __init__(self, run: RunContract) -> None:
        self._run = run
        self.stores: dict[str, Store] = {}
        self.enrol(run, MID)

    def open(self, kind: str, address: str) -> str:
        """A store as a rank opens it: its name (a ``HashStore`` gets one of its process's own)."""
        if kind == "HashStore":
            label = calling_process(self._run)
            address = f"{label}#{sum(1 for name in self.stores if name.startswith(f'HashStore({label}#')) + 1}"
        name = f"{kind}({address})"
        store = self.stores.get(name)
        if store is None:
            store = self.stores[name] = Store(name)
        self._run.schedule(f"open {name}", access=store.read)
        return name

    def call(self, name: str, op: str, args: tuple) -> Any:
        store = self.stores[name]
        run = self._run
        shown = f"{name}.{op}({', '.join(repr(a) for a in args[:1])})"
        if op in BLOCKING:
            keys = BLOCKING[op](args)
            run.schedule(shown, access=store.wait, enabled=lambda: store.check(keys))
            return store.get(args[0]) if op == "get" else None
        run.schedule(shown, access=store.read if op in READING else store.write)
        return getattr(store, op)(*args)
