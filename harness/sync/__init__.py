"""Controlled stand-ins for threading, queue, concurrent.futures and time, one module per family:

``locks`` (Lock, RLock), ``conditions`` (Condition), ``events`` (Event, Semaphore, BoundedSemaphore, Barrier),
``queues`` (Queue, LifoQueue, PriorityQueue, SimpleQueue), ``futures`` (Future, wait, as_completed), ``executor``
(ThreadPoolExecutor), ``clock`` (sleep and the clocks). The stand-ins use the runtime only; what puts them in
place of the stdlib in instrumented modules (module facades, identity swaps, virtual thread idents and pid) is
``racecheck.control.sync_facades``, one layer up.

The factories decide at call time: a controlled thread gets a controlled object, any other thread the real one,
so an instrumented module keeps working for uncontrolled threads. Releases and notifies are traced but are not
scheduling points: they only enable others, and everything a thread did since its previous point happened inside
the critical section, so no interleaving is lost.
"""

from racecheck.sync.clock import monotonic, monotonic_ns, perf_counter, perf_counter_ns, sleep, time, time_ns
from racecheck.sync.conditions import Condition, ControlledCondition
from racecheck.sync.events import (
    Barrier,
    BoundedSemaphore,
    ControlledBarrier,
    ControlledBoundedSemaphore,
    ControlledEvent,
    ControlledSemaphore,
    Event,
    Semaphore,
)
from racecheck.sync.executor import DEFAULT_MAX_WORKERS, ThreadPoolExecutor
from racecheck.sync.futures import Future, as_completed, wait
from racecheck.sync.locks import ControlledLock, ControlledRLock, Lock, RLock
from racecheck.sync.primitive import Primitive
from racecheck.sync.queues import (
    ControlledLifoQueue,
    ControlledPriorityQueue,
    ControlledQueue,
    ControlledSimpleQueue,
    LifoQueue,
    PriorityQueue,
    Queue,
    SimpleQueue,
)

__racecheck_engine__ = True

__all__ = [
    "DEFAULT_MAX_WORKERS", "Barrier", "BoundedSemaphore", "Condition", "ControlledBarrier",
    "ControlledBoundedSemaphore", "ControlledCondition", "ControlledEvent", "ControlledLifoQueue", "ControlledLock",
    "ControlledPriorityQueue", "ControlledQueue", "ControlledRLock", "ControlledSemaphore", "ControlledSimpleQueue",
    "Event", "Future", "LifoQueue", "Lock", "PriorityQueue", "Primitive", "Queue", "RLock", "Semaphore",
    "SimpleQueue", "ThreadPoolExecutor", "as_completed", "monotonic", "monotonic_ns", "perf_counter",
    "perf_counter_ns", "sleep", "time", "time_ns", "wait",
]
