"""The sync stand-ins put in place of the stdlib: one module facade per stdlib module they replace names of, and
the identity swaps that instrumentation applies. Importing this module registers the swaps (``racecheck.control``
imports it, so whoever uses the control layer has them, before any extension registers its own).

Every global of a controlled module (``racecheck.control.autocontrol``: every module but the engine's, the stdlib's
and ``exclude=``'s) that *is* ``threading``, ``queue``, ``concurrent``/``concurrent.futures`` or ``time`` becomes a
facade (a ``ModuleFacade``, see ``racecheck.control.facade``), and so does ``os`` in an explicitly instrumented
module; every global that is one of their classes or functions becomes its stand-in from ``racecheck.sync``,
matched by identity so aliases are caught; an import made during an exploration gets the facades too.
Process-specific values that could reach a trace or a decision are virtualised for controlled threads:
``threading.get_ident``/``get_native_id`` (logical, per thread of the run) and ``os.getpid`` (a fixed number).
Uncontrolled threads see the real values.

The fake filesystem has its own facade of ``os`` (``racecheck.fakefs.os_facade``), which replaces
``os_getpid_facade`` where it is active; ``register_override`` keeps ``getpid`` virtual there too.
"""

from __future__ import annotations

import _thread
import concurrent
import concurrent.futures
import concurrent.futures._base as _real_futures_base
import concurrent.futures.thread as _real_futures_thread
import os as _real_os
import queue as _real_queue
import threading as _real_threading
import time as _real_time
from typing import Any

from racecheck import runtime
from racecheck.control import instrument
from racecheck.control.facade import ModuleFacade, register_override
from racecheck.control.threads import LOGICAL_IDENT_BASE
from racecheck.sync import clock, conditions, events, executor, futures, locks, queues

__racecheck_engine__ = True

LOGICAL_PID = 4242  # what os.getpid() reads inside a run

# Library code asks get_ident() for its caches' keys (fsspec, on every filesystem it hands out): one call, no more.
_state = runtime.thread_state


def get_ident(_state: Any = _state, _real: Any = _thread.get_ident) -> int:
    rec = _state.thread
    return _real() if rec is None else LOGICAL_IDENT_BASE + rec.tid


def get_native_id(_state: Any = _state, _real: Any = _thread.get_native_id) -> int:
    rec = _state.thread
    return _real() if rec is None else LOGICAL_IDENT_BASE + rec.tid


def getpid() -> int:
    run = runtime.current_run()
    if run is None:
        return _real_os.getpid()
    return getattr(run, "logical_pid", LOGICAL_PID)  # a child of the run has its own (control.processes)


get_ident.__doc__ = "Logical thread ident inside a racecheck run (the same in every process), the real one elsewhere."
get_native_id.__doc__ = get_ident.__doc__
getpid.__doc__ = "A fixed pid inside a racecheck run (the same in every process), the real one elsewhere."

_THREADING = {
    "Lock": locks.Lock, "RLock": locks.RLock, "Condition": conditions.Condition, "Event": events.Event,
    "Semaphore": events.Semaphore, "BoundedSemaphore": events.BoundedSemaphore, "Barrier": events.Barrier,
    "get_ident": get_ident, "get_native_id": get_native_id,
}
_QUEUE = {"Queue": queues.Queue, "LifoQueue": queues.LifoQueue, "PriorityQueue": queues.PriorityQueue,
          "SimpleQueue": queues.SimpleQueue}
_FUTURES = {"ThreadPoolExecutor": executor.ThreadPoolExecutor, "Future": futures.Future, "wait": futures.wait,
            "as_completed": futures.as_completed}
_TIME = {"sleep": clock.sleep, "monotonic": clock.monotonic, "monotonic_ns": clock.monotonic_ns,
         "perf_counter": clock.perf_counter, "perf_counter_ns": clock.perf_counter_ns, "time": clock.time,
         "time_ns": clock.time_ns}

threading_facade = ModuleFacade(_real_threading, _THREADING)
queue_facade = ModuleFacade(_real_queue, _QUEUE)
# The executor's and the future's home modules, for ``from concurrent.futures.thread import ThreadPoolExecutor``
# run inside a function (control by default hands out facades on import; see autocontrol).
_FUTURES_THREAD = {"ThreadPoolExecutor": executor.ThreadPoolExecutor}
_FUTURES_BASE = {"Future": futures.Future, "wait": futures.wait, "as_completed": futures.as_completed}
futures_thread_facade = ModuleFacade(_real_futures_thread, _FUTURES_THREAD)
futures_base_facade = ModuleFacade(_real_futures_base, _FUTURES_BASE)
futures_facade = ModuleFacade(concurrent.futures, {**_FUTURES, "thread": futures_thread_facade,
                                                   "_base": futures_base_facade})
concurrent_facade = ModuleFacade(concurrent, {"futures": futures_facade})
time_facade = ModuleFacade(_real_time, _TIME)
os_getpid_facade = ModuleFacade(_real_os, {"getpid": getpid})  # every other name is the real os's
# Whichever facade of os is in place (the fake filesystem has its own), getpid is the virtual one.
register_override(_real_os, "getpid", getpid)

for _real_module, _facade_module, _names in [
    (_real_threading, threading_facade, _THREADING),
    (_real_queue, queue_facade, _QUEUE),
    (concurrent.futures, futures_facade, _FUTURES),
    (_real_futures_thread, futures_thread_facade, _FUTURES_THREAD),
    (_real_futures_base, futures_base_facade, _FUTURES_BASE),
    (_real_time, time_facade, _TIME),
    (_real_os, os_getpid_facade, {"getpid": getpid}),
]:
    # Library code reads os.path, os.environ, ... through a module global: by default only the fake filesystem's
    # own facade of os goes there, so that a run without fs= pays no forwarding for a virtual getpid alone.
    instrument.register_swap(_real_module, _facade_module, everywhere=_real_module is not _real_os)
    for _name, _replacement in _names.items():
        instrument.register_swap(getattr(_real_module, _name), _replacement)
instrument.register_swap(concurrent, concurrent_facade)

# A class statement whose base is one of the factories above (``class Ticket(threading.Event)`` in a module first
# imported during a run, which reads the facade) gets the real class as its base (PEP 560), as it would have had
# the module been imported before the exploration: instances of such subclasses are real objects.
for _factory, _real_class in [
    (conditions.Condition, _real_threading.Condition), (events.Event, _real_threading.Event),
    (events.Semaphore, _real_threading.Semaphore), (events.BoundedSemaphore, _real_threading.BoundedSemaphore),
    (events.Barrier, _real_threading.Barrier), (queues.Queue, _real_queue.Queue),
    (queues.LifoQueue, _real_queue.LifoQueue), (queues.PriorityQueue, _real_queue.PriorityQueue),
    (queues.SimpleQueue, _real_queue.SimpleQueue),
]:
    if isinstance(_real_class, type):
        _factory.__mro_entries__ = lambda bases, _base=_real_class: (_base,)
instrument.register_swap(_thread.get_ident, get_ident)
instrument.register_swap(_thread.get_native_id, get_native_id)
