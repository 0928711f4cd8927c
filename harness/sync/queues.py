"""queue.Queue, LifoQueue, PriorityQueue and SimpleQueue: every put/get/inspection is a scheduling point; a blocked
put/get waits for room/an item (or its virtual timeout). Argument checks and exceptions follow the stdlib exactly
(a negative put timeout is only an error on a bounded queue; SimpleQueue has no task_done/join/full)."""

from __future__ import annotations

import heapq
import queue as _real_queue
from collections import deque
from typing import Any

from racecheck import runtime
from racecheck.runtime import RunContract
from racecheck.runtime.access import GET, NOTIFY, PUT, READ, WAIT, on
from racecheck.runtime.steps import ObjKind
from racecheck.sync.primitive import Primitive, attempt

__racecheck_engine__ = True


class _QueueCore(Primitive):
    """What SimpleQueue and Queue share: FIFO storage, get, non-blocking variants, qsize/empty."""

    _kind = "SimpleQueue"
    _obj_kind = ObjKind.FIFO_QUEUE  # a get takes the oldest item: the racing pair reads it (``race_order``)

    def __init__(self, run: RunContract, name: str | None = None) -> None:
        super().__init__(run, name)
        self._items: Any = self._new_container()

    def _accesses(self) -> None:
        name = self._obj
        self._put_access, self._get_access, self._read_access = on(name, PUT), on(name, GET), on(name, READ)
        self._done_access, self._join_access = on(name, NOTIFY), on(name, WAIT)

    def _new_container(self) -> Any:
        return deque()

    def _qput(self, item: Any) -> None:
        self._items.append(item)

    def _qget(self) -> Any:
        return self._items.popleft()

    def _has_item(self) -> bool:
        return len(self._items) > 0

    def get(self, block: bool = True, timeout: float | None = None) -> Any:
        if block and timeout is None:  # the common case, a wait as long as it takes: one call less (hot path)
            self._run.schedule(f"get {self._name}", access=self._get_access, enabled=self._has_item, skip=1)
            return self._qget()
        if block and timeout < 0:
            raise ValueError("'timeout' must be a non-negative number")
        wait = float(timeout) if block else 0.0
        if not attempt(self._run, f"get {self._name}", self._has_item, wait, self._get_access):
            raise _real_queue.Empty
        return self._qget()

    def get_nowait(self) -> Any:
        return self.get(block=False)

    def qsize(self) -> int:
        self._run.schedule(f"qsize {self._name}", access=self._read_access, skip=1)
        return len(self._items)

    def empty(self) -> bool:
        self._run.schedule(f"empty {self._name}", access=self._read_access, skip=1)
        return not self._items


class ControlledSimpleQueue(_QueueCore):
    _kind = "SimpleQueue"

    def put(self, item: Any, block: bool = True, timeout: float | None = None) -> None:
        self._run.schedule(f"put {self._name}", access=self._put_access, skip=1)
        self._qput(item)

    def put_nowait(self, item: Any) -> None:
        self.put(item, block=False)


class ControlledQueue(_QueueCore):
    """queue.Queue with every put/get/inspection a scheduling point."""

    _kind = "Queue"

    def __init__(self, run: RunContract, maxsize: int = 0) -> None:
        super().__init__(run)
        self.maxsize = maxsize
        self.unfinished_tasks = 0

    def _has_room(self) -> bool:
        return self.maxsize <= 0 or len(self._items) < self.maxsize

    def put(self, item: Any, block: bool = True, timeout: float | None = None) -> None:
        if self.maxsize > 0 and block and timeout is not None and timeout < 0:
            raise ValueError("'timeout' must be a non-negative number")
        if self.maxsize <= 0:
            wait: float | None = None  # an unbounded queue never blocks (its timeout is never looked at)
        elif not block:
            wait = 0.0
        else:
            wait = None if timeout is None else float(timeout)
        ok = attempt(self._run, f"put {self._name}", self._has_room, wait, self._put_access)
        if not ok:
            raise _real_queue.Full
        self._qput(item)
        self.unfinished_tasks += 1

    def put_nowait(self, item: Any) -> None:
        self.put(item, block=False)

    def task_done(self) -> None:
        self._run.schedule(f"task_done {self._name}", access=self._done_access, skip=1)
        if self.unfinished_tasks <= 0:
            raise ValueError("task_done() called too many times")
        self.unfinished_tasks -= 1

    def join(self) -> None:
        self._run.schedule(
            f"join {self._name}", access=self._join_access, enabled=lambda: self.unfinished_tasks == 0, skip=1
        )

    def full(self) -> bool:
        self._run.schedule(f"full {self._name}", access=self._read_access, skip=1)
        return 0 < self.maxsize <= len(self._items)


class ControlledLifoQueue(ControlledQueue):
    _kind = "LifoQueue"
    _obj_kind = ObjKind.QUEUE

    def _new_container(self) -> Any:
        return []

    def _qget(self) -> Any:
        return self._items.pop()


class ControlledPriorityQueue(ControlledQueue):
    _kind = "PriorityQueue"
    _obj_kind = ObjKind.QUEUE

    def _new_container(self) -> Any:
        return []

    def _qput(self, item: Any) -> None:
        heapq.heappush(self._items, item)

    def _qget(self) -> Any:
        return heapq.heappop(self._items)


def _queue_factory(controlled: type, real: type) -> Any:
    def factory(*args: Any, **kwargs: Any) -> Any:
        run = runtime.current_run()
        return controlled(run, *args, **kwargs) if run is not None else real(*args, **kwargs)

    factory.__name__ = real.__name__
    factory.__qualname__ = real.__qualname__
    factory.__doc__ = f"Controlled {real.__name__} inside a racecheck run, the real one elsewhere."
    return factory


Queue = _queue_factory(ControlledQueue, _real_queue.Queue)
LifoQueue = _queue_factory(ControlledLifoQueue, _real_queue.LifoQueue)
PriorityQueue = _queue_factory(ControlledPriorityQueue, _real_queue.PriorityQueue)
SimpleQueue = _queue_factory(ControlledSimpleQueue, _real_queue.SimpleQueue)
