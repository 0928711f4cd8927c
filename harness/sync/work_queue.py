"""The executor's work queue: a first-in first-out queue whose items are told apart by their place in it, so a put
and a get of different items commute.

A plain controlled queue records every put and get on the queue itself, and any two of them conflict: that is the
only safe choice when nothing more is known. The executor's queue is first in, first out, and it knows which item
each operation moves: the k-th put fills slot k and the k-th get empties it. So a put records the queue's tail
(puts are ordered among themselves: which item lands in which slot) and its slot; a get records the queue's head
(gets are ordered among themselves: which worker takes which item) and its slot. A submit that queues item k+1
while a worker takes item k then commutes with that get, as it does in the stdlib, where both leave the same queue
behind and each does what it did. Without this, every such pair was explored in both orders (a pool of 3 workers
given 3 items: over 30,000 schedules without an end; docs/performance.md).

A worker that meets the shutdown sentinel leaves it where it is (the stdlib takes it and puts it back, for the
next worker: the same queue afterwards), so that step only reads the queue and the workers' exits commute with
each other instead of being explored in every order. A poll or a timed get, and ``qsize``/``empty``, also read
the tail: whether anything is left depends on every put.
"""

from __future__ import annotations

import queue as _real_queue
from typing import Any

from racecheck.runtime import RunContract
from racecheck.runtime.access import GET, PUT, READ, Access
from racecheck.runtime.steps import Obj, ObjKind
from racecheck.sync.primitive import attempt
from racecheck.sync.queues import ControlledSimpleQueue

__racecheck_engine__ = True


class WorkQueue(ControlledSimpleQueue):
    """An executor's work queue (``racecheck.sync.executor``); see the module docstring."""

    def __init__(self, run: RunContract, name: Obj) -> None:
        super().__init__(run, name)
        self._puts = 0  # items ever put: the next put fills slot ``_puts``
        self._gets = 0  # items ever taken: the next get empties slot ``_gets``
        self._tail = Obj(ObjKind.ENGINE_STATE, f"{self._name}.tail", engine=True)
        self._slots: list[Obj] = []

    def _slot(self, k: int) -> Obj:
        slots = self._slots
        while len(slots) <= k:
            slots.append(Obj(ObjKind.ENGINE_STATE, f"{self._name}[{len(slots)}]", engine=True))
        return slots[k]

    def _taking(self) -> tuple[Access, ...]:
        return (Access(self._obj, GET), Access(self._slot(self._gets), GET))

    def put(self, item: Any, block: bool = True, timeout: float | None = None) -> None:
        run = self._run
        run.schedule(f"put {self._name}", access=(Access(self._tail, PUT), Access(self._slot(self._puts), PUT)),
                     skip=1)
        # Another thread's put may have come first between the arrival and this thread's turn: the slot it filled.
        run.narrow((Access(self._tail, PUT), Access(self._slot(self._puts), PUT)))
        self._qput(item)
        self._puts += 1

    def get(self, block: bool = True, timeout: float | None = None) -> Any:
        run = self._run
        if block and timeout is None:
            run.schedule(f"get {self._name}", access=self._taking(), enabled=self._has_item, skip=1)
            run.narrow(self._taking())
            return self._take()
        if block and timeout < 0:
            raise ValueError("'timeout' must be a non-negative number")
        wait = float(timeout) if block else 0.0
        if not attempt(run, f"get {self._name}", self._has_item, wait, (*self._taking(), Access(self._tail, READ))):
            raise _real_queue.Empty
        run.touch(self._taking())  # the slot it emptied, if another get came first since the arrival
        return self._take()

    def _take(self) -> Any:
        self._gets += 1
        return self._qget()

    def get_work(self) -> Any:
        """A worker's blocking get: the next item, or the shutdown sentinel (None), which stays for the next worker
        and is only read."""
        run = self._run
        run.schedule(f"get {self._name}", access=self._taking(), enabled=self._has_item, skip=1)
        if self._items[0] is None:
            run.narrow((Access(self._obj, READ), Access(self._slot(self._gets), READ)))
            return None
        run.narrow(self._taking())
        return self._take()

    def qsize(self) -> int:
        self._run.schedule(f"qsize {self._name}", access=self._looking(), skip=1)
        return len(self._items)

    def empty(self) -> bool:
        self._run.schedule(f"empty {self._name}", access=self._looking(), skip=1)
        return not self._items

    def _looking(self) -> tuple[Access, ...]:
        return (Access(self._obj, READ), Access(self._tail, READ))
