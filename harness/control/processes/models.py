"""The parent's models of ``multiprocessing``'s inter-process objects, built on the controlled sync stand-ins.

``multiprocessing.Queue()``, ``Lock()``, ``Event()``, ... called by a controlled thread make one of these: in the
parent it is the stand-in itself (a queue of pickled items, a controlled lock), so its blocking is a predicate of
the one scheduler and a deadlock across processes is exact; in a child it is the same class holding only its id,
whose every method is a request its proxy performs here (``link.routed``). Items cross as pickles, as they do
through the real objects, so a child and the parent never share a Python object.
"""

from __future__ import annotations

from collections import deque
from multiprocessing.reduction import ForkingPickler
from multiprocessing.sharedctypes import typecode_to_type
from typing import Any

from racecheck import runtime
from racecheck.control.memory_hooks import no_items
from racecheck.control.processes.link import rebuild, registry_of, routed, uncontrolled
from racecheck.runtime import RunContract
from racecheck.runtime.access import GET, PUT, READ, WRITE, on
from racecheck.runtime.steps import ObjKind
from racecheck.sync.conditions import ControlledCondition
from racecheck.sync.events import ControlledBarrier, ControlledBoundedSemaphore, ControlledEvent, ControlledSemaphore
from racecheck.sync.locks import ControlledLock, ControlledRLock
from racecheck.sync.primitive import Primitive, wait_timeout
from racecheck.sync.queues import ControlledQueue, ControlledSimpleQueue

__racecheck_engine__ = True


def dumps(run: RunContract, obj: Any) -> bytes:
    """What crosses a process boundary: the object pickled as ``multiprocessing`` pickles it (outside the run)."""
    with uncontrolled(run):
        return bytes(ForkingPickler.dumps(obj))


def loads(run: RunContract, data: bytes) -> Any:
    with uncontrolled(run):
        return ForkingPickler.loads(data)


class Served:
    """A model the parent serves: named by ``mid`` (its name in the trace), pickled as that name alone."""

    mid: str

    def enrol(self, run: RunContract, mid: str) -> None:
        self.mid = mid
        registry_of(run).models[mid] = self

    def __reduce__(self) -> tuple:
        return (rebuild, (type(self), self.mid))


class ServedSync(Served):
    """A served sync object (a lock, semaphore, condition, event, barrier, of ``multiprocessing`` or of a manager):
    made as its stand-in is (the next class in its bases), then enrolled under its name."""

    def __init__(self, run: RunContract, *args: Any, **kwargs: Any) -> None:
        super().__init__(run, *args, **kwargs)
        self.enrol(run, self._name)


class ServedHeld(ServedSync):
    """One a ``with`` block takes and gives, through its own (routed) ``acquire`` and ``release``."""

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc: Any) -> None:
        self.release()


def mp_acquire(base: type) -> Any:
    """``acquire(block, timeout)`` as ``multiprocessing``'s lock and rlock take them, on ``base``'s acquire."""

    @routed
    def acquire(self: Any, block: bool = True, timeout: float | None = None) -> bool:
        wait = _mp_timeout(block, timeout)
        if wait is None:
            return base.acquire(self)
        return base.acquire(self, True, wait) if wait > 0 else base.acquire(self, False)

    return acquire


def _mp_timeout(block: bool, timeout: float | None) -> float | None:
    """multiprocessing's waits: a negative timeout polls, never an error."""
    if not block:
        return 0.0
    return None if timeout is None else max(float(timeout), 0.0)


class ServedQueue(Served, ControlledQueue):
    """What ``multiprocessing``'s queue and a manager's share: enrolled as made, the nowait forms through the
    subclass's own ``put``/``get`` (each family blocks and times out its own way), the rest routed as they are."""

    def __init__(self, run: RunContract, maxsize: int = 0) -> None:
        ControlledQueue.__init__(self, run, maxsize)
        self.enrol(run, self._name)

    def put_nowait(self, obj: Any) -> None:
        self.put(obj, False)

    def get_nowait(self) -> Any:
        return self.get(False)

    qsize = routed(ControlledQueue.qsize)
    empty = routed(ControlledQueue.empty)
    full = routed(ControlledQueue.full)
    task_done = routed(ControlledQueue.task_done)
    join = routed(ControlledQueue.join)


class ProcessQueue(ServedQueue):
    """``multiprocessing.Queue`` / ``JoinableQueue``: a put is seen at once (the real one's feeder thread may take a
    while: a program that relies on ``empty()`` right after a ``put`` is wrong there and not caught here)."""

    _kind = "mp.Queue"

    @routed
    def put(self, obj: Any, block: bool = True, timeout: float | None = None) -> None:
        ControlledQueue.put(self, dumps(self._run, obj), True, _mp_timeout(block, timeout))

    @routed
    def get(self, block: bool = True, timeout: float | None = None) -> Any:
        wait = _mp_timeout(block, timeout)
        return loads(self._run, ControlledQueue.get(self, wait is None or wait > 0, wait if wait else None))

    def close(self) -> None:
        """The real one stops its feeder thread; this one has none."""

    def join_thread(self) -> None:
        """See ``close``."""

    def cancel_join_thread(self) -> None:
        """See ``close``."""


class ProcessJoinableQueue(ProcessQueue):
    _kind = "mp.JoinableQueue"


class ProcessSimpleQueue(Served, ControlledSimpleQueue):
    _kind = "mp.SimpleQueue"

    def __init__(self, run: RunContract) -> None:
        ControlledSimpleQueue.__init__(self, run)
        self.enrol(run, self._name)

    @routed
    def put(self, obj: Any) -> None:
        ControlledSimpleQueue.put(self, dumps(self._run, obj))

    @routed
    def get(self) -> Any:
        return loads(self._run, ControlledSimpleQueue.get(self))

    empty = routed(ControlledSimpleQueue.empty)

    def close(self) -> None:
        """Nothing to release: the model has no pipe."""


class ProcessLock(ServedHeld, ControlledLock):
    """``multiprocessing.Lock``: ``acquire(block, timeout)``; released too often, a ValueError, as the real one's."""

    _kind = "mp.Lock"
    acquire = mp_acquire(ControlledLock)

    @routed
    def release(self) -> None:
        if not self.locked():
            raise ValueError("semaphore or lock released too many times")
        ControlledLock.release(self)


class ProcessRLock(ServedHeld, ControlledRLock):
    _kind = "mp.RLock"
    acquire = mp_acquire(ControlledRLock)

    @routed
    def release(self) -> None:
        try:
            ControlledRLock.release(self)
        except RuntimeError:
            raise AssertionError("attempt to release recursive lock not owned by thread") from None


class ProcessEvent(ServedSync, ControlledEvent):
    _kind = "mp.Event"

    is_set = routed(ControlledEvent.is_set)
    set = routed(ControlledEvent.set)
    clear = routed(ControlledEvent.clear)
    wait = routed(ControlledEvent.wait)


class ProcessSemaphore(ServedHeld, ControlledSemaphore):
    _kind = "mp.Semaphore"

    @routed
    def acquire(self, block: bool = True, timeout: float | None = None) -> bool:
        wait = _mp_timeout(block, timeout)
        return ControlledSemaphore.acquire(self, True, wait)

    release = routed(ControlledSemaphore.release)


class ProcessBoundedSemaphore(ServedHeld, ControlledBoundedSemaphore):
    _kind = "mp.BoundedSemaphore"
    acquire = ProcessSemaphore.acquire
    release = routed(ControlledBoundedSemaphore.release)


class ProcessCondition(ServedHeld, ControlledCondition):
    """``multiprocessing.Condition``: its lock is a served one, so a child that holds it holds it in the parent."""

    _kind = "mp.Condition"

    def __init__(self, run: RunContract, lock: Any = None) -> None:
        super().__init__(run, lock if lock is not None else ProcessRLock(run))

    wait = routed(ControlledCondition.wait)
    wait_for = routed(ControlledCondition.wait_for)
    notify = routed(ControlledCondition.notify)
    notify_all = routed(ControlledCondition.notify_all)


class ProcessBarrier(ServedSync, ControlledBarrier):
    _kind = "mp.Barrier"

    wait = routed(ControlledBarrier.wait)
    reset = routed(ControlledBarrier.reset)
    abort = routed(ControlledBarrier.abort)


class ProcessValue(Served, Primitive):
    """``multiprocessing.Value``: every read and write of ``value`` is a point on the value (plain memory to the
    relation, so two unordered writes are a data race); ``get_lock()`` is a served RLock. The value lives in a real
    ctypes object, so it converts and wraps as the real one does."""

    _kind = "mp.Value"
    _obj_kind = ObjKind.MEMORY

    def __init__(self, run: RunContract, typecode_or_type: Any, *args: Any, lock: Any = True) -> None:
        Primitive.__init__(self, run)
        ctype = typecode_to_type.get(typecode_or_type, typecode_or_type)
        self._c = ctype(*args)
        if lock is True or lock is None:
            lock = ProcessRLock(run)
        self._lock = lock or None
        self.enrol(run, self._name)

    def _accesses(self) -> None:
        self._read, self._write = on(self._obj, READ), on(self._obj, WRITE)
        self._ops = (f"read {self._name}", f"write {self._name}")  # a child's every read is one: made once

    @routed
    def get_value(self) -> Any:
        self._run.schedule(self._ops[0], access=self._read)
        return self._c.value

    @routed
    def set_value(self, value: Any) -> None:
        self._run.schedule(self._ops[1], access=self._write)
        self._c.value = value

    value = property(lambda self: self.get_value(), lambda self, value: self.set_value(value))

    @routed
    def get_lock(self) -> Any:
        if self._lock is None:
            raise AttributeError("'RawValue' has no attribute 'get_lock'")
        return self._lock

    def get_obj(self) -> Any:
        raise NotImplementedError("racecheck: a served Value has no ctypes object to hand out")

    def __repr__(self) -> str:
        return f"<racecheck {self._name}>"


class ProcessArray(ProcessValue):
    """``multiprocessing.Array``: item and slice reads and writes are points on the array; ``len`` is not."""

    _kind = "mp.Array"

    def __init__(self, run: RunContract, typecode_or_type: Any, size_or_initializer: Any, *, lock: Any = True) -> None:
        Primitive.__init__(self, run)
        ctype = typecode_to_type.get(typecode_or_type, typecode_or_type)
        if isinstance(size_or_initializer, int):
            self._c = (ctype * size_or_initializer)()
        else:
            items = list(size_or_initializer)
            self._c = (ctype * len(items))(*items)
        self._lock = ProcessRLock(run) if lock is True or lock is None else (lock or None)
        self.enrol(run, self._name)

    @routed
    def __getitem__(self, index: Any) -> Any:
        self._run.schedule(f"read {self._name}[{index!r}]", access=self._read)
        return self._c[index]

    @routed
    def __setitem__(self, index: Any, value: Any) -> None:
        self._run.schedule(f"write {self._name}[{index!r}]", access=self._write)
        self._c[index] = value

    @routed
    def __len__(self) -> int:
        return len(self._c)

    def get_value(self) -> Any:
        raise AttributeError("'SynchronizedArray' object has no attribute 'value'")

    value = property(get_value)


class ProcessConnection(Served, Primitive):
    """One end of a ``multiprocessing.Pipe``: ``send`` puts a pickle in the other end's inbox, ``recv`` takes the
    oldest from its own (blocking until there is one, or EOF once every process that held the other end closed
    it). Each process holds its own copy of an end (a child gets the ends it inherits or is handed): ``close``
    closes the caller's copy only, as closing a descriptor does."""

    _kind = "mp.Connection"
    _obj_kind = ObjKind.FIFO_QUEUE

    def __init__(self, run: RunContract, name: str, readable: bool, writable: bool) -> None:
        Primitive.__init__(self, run, name)
        self._inbox: deque[bytes] = deque()
        self.peer: ProcessConnection | None = None
        self.holders: set[str] = {"P0"}  # the processes whose copy of this end is open
        self.readable, self.writable = readable, writable
        self.enrol(run, self._name)

    def _accesses(self) -> None:
        self._get, self._read = on(self._obj, GET), on(self._obj, READ)
        self.put_access = on(self._obj, PUT)  # what the other end's send and close touch

    def _ready(self) -> bool:
        return bool(self._inbox) or not self.peer.holders

    def _check(self, caller: str, readable: bool) -> None:
        if caller not in self.holders:
            raise OSError("handle is closed")
        if readable and not self.readable:
            raise OSError("connection is write-only")
        if not readable and not self.writable:
            raise OSError("connection is read-only")

    @routed
    def send_bytes(self, buf: Any, offset: int = 0, size: int | None = None) -> None:
        self._check(calling_process(self._run), False)
        data = bytes(memoryview(buf).cast("B"))
        data = data[offset:] if size is None else data[offset:offset + size]
        peer = self.peer
        self._run.schedule(f"send {self._name}", access=peer.put_access)
        if not peer.holders:
            raise BrokenPipeError(32, "Broken pipe")
        peer._inbox.append(data)

    def send(self, obj: Any) -> None:
        # a spawned child's handle has no run (only its id): it pickles for itself, as the real end does
        self.send_bytes(dumps(getattr(self, "_run", None), obj))

    @routed
    def recv_bytes(self, maxlength: int | None = None) -> bytes:
        self._check(calling_process(self._run), True)
        self._run.schedule(f"recv {self._name}", access=self._get, enabled=self._ready)
        if not self._inbox:
            raise EOFError
        return self._inbox.popleft()

    def recv(self) -> Any:
        return loads(getattr(self, "_run", None), self.recv_bytes())

    @routed
    def poll(self, timeout: float | None = 0.0) -> bool:
        self._check(calling_process(self._run), True)
        wait = wait_timeout(timeout)
        self._run.schedule(f"poll {self._name}", access=self._read, enabled=None if wait == 0 else self._ready,
                           timeout=wait if wait else None, yielding=not self._ready())
        return self._ready()

    @routed
    def close(self) -> None:
        self.holders.discard(calling_process(self._run))
        self._run.note(f"close {self._name}", access=self.peer.put_access)

    def waitable(self, caller: str) -> tuple[tuple, Any]:
        """For ``connection.wait`` by ``caller`` (``processes.waits``): the access of a look at this end and the
        predicate of its readiness (data, or EOF), after the checks ``recv`` makes."""
        self._check(caller, True)
        return self._read, self._ready

    def fileno(self) -> int:
        raise OSError("racecheck: a served Pipe end has no descriptor (multiprocessing.connection.wait on it is "
                      "served only beside other served ends and the run's processes' sentinels)")

    def __enter__(self) -> ProcessConnection:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def calling_process(run: RunContract) -> str:
    """The process of the calling controlled thread: "P0" for the parent's own threads, "P<n>" for a proxy."""
    rec = runtime.current_thread_record()
    return registry_of(run).process_of.get(getattr(rec, "tid", -1), "P0")


def pipe(run: RunContract, duplex: bool = True) -> tuple[ProcessConnection, ProcessConnection]:
    """``multiprocessing.Pipe(duplex)``: two ends; without duplex, a read-only end and a write-only one."""
    base = run.new_object_id("mp.Pipe")
    a = ProcessConnection(run, f"{base}.0", True, duplex)
    b = ProcessConnection(run, f"{base}.1", duplex, True)
    a.peer, b.peer = b, a
    return a, b


FACTORIES: dict[str, Any] = {
    "Queue": ProcessQueue, "JoinableQueue": ProcessJoinableQueue, "SimpleQueue": ProcessSimpleQueue,
    "Pipe": pipe, "Value": ProcessValue, "Array": ProcessArray, "Lock": ProcessLock, "RLock": ProcessRLock,
    "Event": ProcessEvent, "Semaphore": ProcessSemaphore, "BoundedSemaphore": ProcessBoundedSemaphore,
    "Condition": ProcessCondition, "Barrier": ProcessBarrier,
}
no_items(ProcessArray)  # its items are its own points: the memory hooks would record each again as ProcessArray#1[0]
