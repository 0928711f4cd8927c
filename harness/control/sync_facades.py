"""The sync stand-ins put in place of the stdlib: one module facade per stdlib module they replace names of, and
the identity swaps that instrumentation applies. Importing this module registers the swaps (``racecheck.control``
imports it, so whoever uses the control layer has them, before any extension registers its own).

Every global of an instrumented module that *is* ``threading``, ``queue``, ``concurrent``/``concurrent.futures``,
``time`` or ``os`` becomes a facade (a ``ModuleFacade``, see ``racecheck.control.facade``), and every global that is
one of their classes or functions becomes its stand-in from ``racecheck.sync``, matched by identity so aliases are
caught. Process-specific values that could reach a trace or a decision are virtualised for controlled threads:
``threading.get_ident``/``get_native_id`` (logical, per thread of the run) and ``os.getpid`` (a fixed number).
Uncontrolled threads see the real values.

The fake filesystem has its own facade of ``os`` (``racecheck.fakefs.os_facade``), which replaces
``os_getpid_facade`` where it is active; ``register_override`` keeps ``getpid`` virtual there too.
"""

from __future__ import annotations

import _thread
import concurrent
import concurrent.futures
import os as _real_os
import queue as _real_queue
import threading as _real_threading
import time as _real_time

from racecheck import runtime
from racecheck.control import instrument
from racecheck.control.facade import ModuleFacade, register_override
from racecheck.control.threads import logical_ident
from racecheck.sync import clock, conditions, events, executor, futures, locks, queues

__racecheck_engine__ = True

LOGICAL_PID = 4242  # what os.getpid() reads inside a run

def get_ident() -> int:
    rec = runtime.current_thread_record()
    return _thread.get_ident() if rec is None else logical_ident(rec)


def get_native_id() -> int:
    rec = runtime.current_thread_record()
    return _thread.get_native_id() if rec is None else logical_ident(rec)


def getpid() -> int:
    return _real_os.getpid() if runtime.current_run() is None else LOGICAL_PID


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
futures_facade = ModuleFacade(concurrent.futures, _FUTURES)
concurrent_facade = ModuleFacade(concurrent, {"futures": futures_facade})
time_facade = ModuleFacade(_real_time, _TIME)
os_getpid_facade = ModuleFacade(_real_os, {"getpid": getpid})  # every other name is the real os's
# Whichever facade of os is in place (the fake filesystem has its own), getpid is the virtual one.
register_override(_real_os, "getpid", getpid)

for _real_module, _facade_module, _names in [
    (_real_threading, threading_facade, _THREADING),
    (_real_queue, queue_facade, _QUEUE),
    (concurrent.futures, futures_facade, _FUTURES),
    (_real_time, time_facade, _TIME),
    (_real_os, os_getpid_facade, {"getpid": getpid}),
]:
    instrument.register_swap(_real_module, _facade_module)
    for _name, _replacement in _names.items():
        instrument.register_swap(getattr(_real_module, _name), _replacement)
instrument.register_swap(concurrent, concurrent_facade)
instrument.register_swap(_thread.get_ident, get_ident)
instrument.register_swap(_thread.get_native_id, get_native_id)
