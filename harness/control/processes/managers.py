"""``multiprocessing.Manager()`` made by a controlled thread: a manager the run serves, with no server process.

The real manager starts a server process and hands out proxies whose every call is a round trip to it; that
process would run beside the run, in no schedule. Here ``Manager()`` (of any context) gives a ``ServedManager``
whose proxies are models the parent serves like the other ``multiprocessing`` objects (``models``): a child holds
their id and each call is a request its proxy performs here, a scheduling point with its accesses. So
``d["n"] += 1`` from two children is a lost update pct and dpor find, and the manager's locks and events are the
controlled sync stand-ins, ordering what they guard for the data-race report.

What is served: ``dict``, ``list``, ``Value``, ``Namespace`` (``manager_data``), ``Array`` (``manager_array``),
``Queue``, ``JoinableQueue``, ``Lock``, ``RLock``, ``Semaphore``, ``BoundedSemaphore``, ``Condition``, ``Event``,
``Barrier``. What is not (``Pool``, ``register``ed types, a ``BaseManager``/``SyncManager`` built directly) says
so: ``Pool`` raises at the call, ``register`` on a manager class made by a controlled thread names the type among
the escapes, and a real manager's server started by a controlled thread is listed among the escapes
(``started_for_real``), never run silently.
"""

from __future__ import annotations

import functools
import multiprocessing.managers
from collections.abc import Callable
from typing import Any

from racecheck import runtime
from racecheck.control import processes_escape
from racecheck.control.processes.link import routed
from racecheck.control.processes.manager_array import ManagedArray
from racecheck.control.processes.manager_data import ManagedDict, ManagedList, ManagedNamespace, ManagedValue
from racecheck.control.processes.models import (
    ProcessBarrier,
    ProcessEvent,
    Served,
    ServedHeld,
    ServedQueue,
    dumps,
    loads,
)
from racecheck.sync.conditions import ControlledCondition
from racecheck.sync.events import ControlledBoundedSemaphore, ControlledSemaphore
from racecheck.sync.locks import ControlledLock, ControlledRLock
from racecheck.sync.queues import ControlledQueue

__racecheck_engine__ = True


def _mgr_acquire(base: type) -> Any:
    """``acquire(blocking, timeout)`` as a manager's lock proxy passes them to the server's ``threading`` lock."""

    @routed
    def acquire(self: Any, blocking: bool = True, timeout: float | None = None) -> bool:
        if timeout is None:
            return base.acquire(self, blocking)
        return base.acquire(self, blocking, timeout)

    return acquire


class ManagedLock(ServedHeld, ControlledLock):
    """A manager's ``Lock()``: a ``threading.Lock`` in the server; ``acquire(blocking, timeout)`` as its proxy
    passes them, a release of an unlocked one a RuntimeError."""

    _kind = "mgr.Lock"
    acquire = _mgr_acquire(ControlledLock)
    release = routed(ControlledLock.release)


class ManagedRLock(ServedHeld, ControlledRLock):
    """A manager's ``RLock()``: owned by the thread (of whichever process) that took it, as the server's thread per
    connection owns it."""

    _kind = "mgr.RLock"
    acquire = _mgr_acquire(ControlledRLock)
    release = routed(ControlledRLock.release)


class ManagedSemaphore(ServedHeld, ControlledSemaphore):
    _kind = "mgr.Semaphore"
    acquire = routed(ControlledSemaphore.acquire)
    release = routed(ControlledSemaphore.release)


class ManagedBoundedSemaphore(ServedHeld, ControlledBoundedSemaphore):
    _kind = "mgr.BoundedSemaphore"
    acquire = routed(ControlledBoundedSemaphore.acquire)
    release = routed(ControlledBoundedSemaphore.release)


class ManagedCondition(ServedHeld, ControlledCondition):
    """A manager's ``Condition(lock)``: its lock a served one (an RLock by default), every call routed."""

    _kind = "mgr.Condition"

    def __init__(self, run: Any, lock: Any = None) -> None:
        super().__init__(run, lock if lock is not None else ManagedRLock(run))

    @routed
    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        return self._lock.acquire(blocking, timeout)

    @routed
    def release(self) -> None:
        self._lock.release()

    wait = routed(ControlledCondition.wait)
    wait_for = routed(ControlledCondition.wait_for)
    notify = routed(ControlledCondition.notify)
    notify_all = routed(ControlledCondition.notify_all)


class ManagedEvent(ProcessEvent):
    _kind = "mgr.Event"


class ManagedBarrier(ProcessBarrier):
    _kind = "mgr.Barrier"


class ManagedQueue(ServedQueue):
    """A manager's ``Queue()``: a ``queue.Queue`` in the server (``queue.Empty``/``Full``, a negative timeout a
    ValueError), its items pickles."""

    _kind = "mgr.Queue"

    @routed
    def put(self, item: Any, block: bool = True, timeout: float | None = None) -> None:
        ControlledQueue.put(self, dumps(self._run, item), block, timeout)

    @routed
    def get(self, block: bool = True, timeout: float | None = None) -> Any:
        return loads(self._run, ControlledQueue.get(self, block, timeout))


class ManagedJoinableQueue(ManagedQueue):
    _kind = "mgr.JoinableQueue"


def _not_served(what: str) -> Callable[..., Any]:
    def refuse(self: Any, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"racecheck: Manager().{what}() is not served by racecheck (a real one would run "
                                  f"in the manager's server process, outside the run); dict, list, Value, Array, "
                                  f"Namespace, Queue, Lock, RLock, Semaphore, Condition, Event and Barrier are")

    refuse.__name__ = what
    return refuse


def _making(model: Callable[..., Any]) -> Callable[..., Any]:
    """A manager's factory method: a new served object, made in the parent (a child's call is routed here)."""

    @functools.wraps(model)
    def make(self: Any, *args: Any, **kwargs: Any) -> Any:
        return model(self._run, *args, **kwargs)

    make.__name__ = getattr(model, "_kind", model.__name__).split(".")[-1]
    return routed(make)


class ServedManager(Served):
    """What ``Manager()`` gives a controlled thread: started already, with no server process; ``start``,
    ``connect``, ``join`` and ``shutdown`` have nothing to do. Its proxies stay usable after ``shutdown`` (the
    real ones fail then: a program that uses one after shutdown is not caught here)."""

    def __init__(self, run: Any) -> None:
        self._run = run
        self.enrol(run, run.new_object_id("mgr.Manager"))

    address = "racecheck-served-manager"

    def start(self, initializer: Any = None, initargs: tuple = ()) -> None:
        """Served managers are started when made."""

    def connect(self) -> None:
        """Nothing to connect to."""

    def join(self, timeout: float | None = None) -> None:
        """No server process to wait for."""

    def shutdown(self) -> None:
        """No server process to stop."""

    def register(self, typeid: str, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError(f"racecheck: register({typeid!r}) on a served Manager() is not supported (a type "
                                  f"of its own would run in the manager's server process, outside the run): "
                                  f"register it on a SyncManager subclass, whose real server racecheck names among "
                                  f"the escapes")

    def __enter__(self) -> ServedManager:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.shutdown()

    def __repr__(self) -> str:
        return f"<racecheck {self.mid}>"

    dict = _making(ManagedDict)
    list = _making(ManagedList)
    Value = _making(ManagedValue)
    Namespace = _making(ManagedNamespace)
    Queue = _making(ManagedQueue)
    JoinableQueue = _making(ManagedJoinableQueue)
    Lock = _making(ManagedLock)
    RLock = _making(ManagedRLock)
    Semaphore = _making(ManagedSemaphore)
    BoundedSemaphore = _making(ManagedBoundedSemaphore)
    Condition = _making(ManagedCondition)
    Event = _making(ManagedEvent)
    Barrier = _making(ManagedBarrier)
    Array = _making(ManagedArray)
    Pool = _not_served("Pool")


def manager(run: Any) -> ServedManager:
    """``multiprocessing.Manager()`` / ``ctx.Manager()`` for a controlled thread."""
    return ServedManager(run)


_SYNC_TYPES = frozenset(multiprocessing.managers.SyncManager.__dict__.get("_registry", {}))


def _registered(cls: type) -> str:
    """The types registered on a manager class beyond ``SyncManager``'s own (", registered: Model"), read from the
    classes' own dictionaries (no code of the program's runs)."""
    names: dict[str, None] = {}
    for klass in reversed(cls.__mro__):
        names.update(dict.fromkeys(name for name in klass.__dict__.get("_registry", {}) if name not in _SYNC_TYPES))
    return f", registered: {', '.join(names)}" if names else ""


def started_for_real(real: Callable[..., Any]) -> Callable[..., Any]:
    """``BaseManager.start``: a manager racecheck does not serve (a ``SyncManager`` or subclass built directly),
    started by a controlled thread, runs its real server process: named among the escapes, then started."""

    @functools.wraps(real)
    def start(self: Any, *args: Any, **kwargs: Any) -> Any:
        if runtime.current_run() is not None and runtime.current_thread_record() is not None:
            processes_escape.record(f"a manager's server process ({type(self).__name__}{_registered(type(self))})")
        return real(self, *args, **kwargs)

    start._racecheck_real = real  # type: ignore[attr-defined]
    return start
