"""Controlled stand-ins for threading, queue, concurrent.futures and time.

Each primitive keeps its own state in plain Python (only one controlled thread runs at a time, so no real locking
is needed) and turns every operation into a scheduling point whose ``enabled`` predicate says when a blocked
caller may proceed. The factories decide at call time: a controlled thread gets a controlled object, any other
thread gets the real one, so an instrumented module keeps working for uncontrolled threads.

Releases and notifies are traced but are not scheduling points: a release only enables others, and everything a
thread did since its previous point happened inside the critical section, so no interleaving is lost.
"""

from __future__ import annotations

import concurrent
import concurrent.futures
import concurrent.futures.thread
import heapq
import itertools
import queue as _real_queue
import threading as _real_threading
import time as _real_time
import types
from collections import deque
from typing import Any

from racecheck import instrument, runtime

__racecheck_engine__ = True

_real_Lock = _real_threading.Lock
_real_RLock = _real_threading.RLock
_real_Condition = _real_threading.Condition
_real_Event = _real_threading.Event
_real_Semaphore = _real_threading.Semaphore
_real_BoundedSemaphore = _real_threading.BoundedSemaphore
_real_Barrier = _real_threading.Barrier
_RealFuture = concurrent.futures.Future
_RealTPE = concurrent.futures.ThreadPoolExecutor
_real_wait = concurrent.futures.wait
_real_as_completed = concurrent.futures.as_completed
_FIRST_COMPLETED = concurrent.futures.FIRST_COMPLETED
_FIRST_EXCEPTION = concurrent.futures.FIRST_EXCEPTION
_ALL_COMPLETED = concurrent.futures.ALL_COMPLETED


def _timeout_arg(timeout: float | None) -> float | None:
    if timeout is None or timeout < 0:
        return None
    return float(timeout)


class _Primitive:
    _kind = "Object"

    def __init__(self, run: Any, name: str | None = None) -> None:
        self._run = run
        self._name = name or run.new_object_id(self._kind)

    def __repr__(self) -> str:
        return f"<racecheck {self._name}>"


# ----- locks ----------------------------------------------------------------------------------------------------


class ControlledLock(_Primitive):
    _kind = "Lock"

    def __init__(self, run: Any, name: str | None = None) -> None:
        super().__init__(run, name)
        self._owner: Any = None
        self._held = False

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        if not blocking:
            ok = self._run.schedule(f"try-acquire {self._name}", enabled=self._is_free, timeout=0)
        else:
            ok = self._run.schedule(f"acquire {self._name}", enabled=self._is_free, timeout=_timeout_arg(timeout))
        if ok:
            self._held = True
            self._owner = runtime.current_thread_record()
        return ok

    def _is_free(self) -> bool:
        return not self._held

    def release(self) -> None:
        if not self._held:
            raise RuntimeError("release unlocked lock")
        self._run._me()
        self._held = False
        self._owner = None
        self._run.note(f"release {self._name}")

    def locked(self) -> bool:
        return self._held

    __enter__ = acquire

    def __exit__(self, *exc: Any) -> None:
        self.release()

    # Condition support (same protocol as the stdlib's private hooks)
    def _release_save(self) -> Any:
        self.release()

    def _acquire_restore(self, state: Any) -> None:
        self.acquire()

    def _is_owned(self) -> bool:
        return self._held and self._owner is runtime.current_thread_record()


class ControlledRLock(_Primitive):
    _kind = "RLock"

    def __init__(self, run: Any, name: str | None = None) -> None:
        super().__init__(run, name)
        self._owner: Any = None
        self._count = 0

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        me = runtime.current_thread_record()
        free = lambda: self._owner is None or self._owner is me  # noqa: E731
        if not blocking:
            ok = self._run.schedule(f"try-acquire {self._name}", enabled=free, timeout=0)
        else:
            ok = self._run.schedule(f"acquire {self._name}", enabled=free, timeout=_timeout_arg(timeout))
        if ok:
            self._owner = me
            self._count += 1
        return ok

    def release(self) -> None:
        if self._owner is not runtime.current_thread_record() or self._count == 0:
            raise RuntimeError("cannot release un-acquired lock")
        self._count -= 1
        if self._count == 0:
            self._owner = None
        self._run.note(f"release {self._name}")

    __enter__ = acquire

    def __exit__(self, *exc: Any) -> None:
        self.release()

    def _is_owned(self) -> bool:
        return self._owner is runtime.current_thread_record()

    def _release_save(self) -> Any:
        if not self._is_owned():
            raise RuntimeError("cannot release un-acquired lock")
        state = (self._count, self._owner)
        self._count = 0
        self._owner = None
        self._run.note(f"release {self._name}")
        return state

    def _acquire_restore(self, state: Any) -> None:
        count, owner = state
        self._run.schedule(f"acquire {self._name}", enabled=lambda: self._owner is None)
        self._owner = owner
        self._count = count


class _Waiter:
    __slots__ = ("notified",)

    def __init__(self) -> None:
        self.notified = False


class ControlledCondition(_Primitive):
    _kind = "Condition"

    def __init__(self, run: Any, lock: Any = None, name: str | None = None) -> None:
        super().__init__(run, name)
        self._lock = lock if lock is not None else ControlledRLock(run, name=self._name)
        self._waiters: deque[_Waiter] = deque()
        self.acquire = self._lock.acquire
        self.release = self._lock.release

    def __enter__(self) -> bool:
        return self._lock.acquire()

    def __exit__(self, *exc: Any) -> None:
        self._lock.release()

    def wait(self, timeout: float | None = None) -> bool:
        if not self._lock._is_owned():
            raise RuntimeError("cannot wait on un-acquired lock")
        waiter = _Waiter()
        self._waiters.append(waiter)
        saved = self._lock._release_save()
        try:
            notified = self._run.schedule(
                f"wait {self._name}", enabled=lambda: waiter.notified, timeout=_timeout_arg(timeout)
            )
        finally:
            if not waiter.notified:
                try:
                    self._waiters.remove(waiter)
                except ValueError:
                    pass
            if not self._run.aborting:
                self._lock._acquire_restore(saved)
        return notified

    def wait_for(self, predicate: Any, timeout: float | None = None) -> Any:
        end = None if timeout is None else self._run.now() + timeout
        result = predicate()
        while not result:
            if end is not None:
                remaining = end - self._run.now()
                if remaining <= 0:
                    break
                self.wait(remaining)
            else:
                self.wait()
            result = predicate()
        return result

    def notify(self, n: int = 1) -> None:
        if not self._lock._is_owned():
            raise RuntimeError("cannot notify on un-acquired lock")
        woken = 0
        while self._waiters and woken < n:
            self._waiters.popleft().notified = True
            woken += 1
        self._run.note(f"notify {self._name} ({woken} woken)")

    def notify_all(self) -> None:
        self.notify(len(self._waiters))

    notifyAll = notify_all  # noqa: N815 - stdlib alias


class ControlledSemaphore(_Primitive):
    _kind = "Semaphore"

    def __init__(self, run: Any, value: int = 1, bound: int | None = None) -> None:
        if value < 0:
            raise ValueError("semaphore initial value must be >= 0")
        super().__init__(run)
        self._value = value
        self._bound = bound

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        available = lambda: self._value > 0  # noqa: E731
        ok = self._run.schedule(
            f"acquire {self._name}", enabled=available, timeout=0 if not blocking else _timeout_arg(timeout)
        )
        if ok:
            self._value -= 1
        return ok

    __enter__ = acquire

    def release(self, n: int = 1) -> None:
        self._run.schedule(f"release {self._name}")
        if self._bound is not None and self._value + n > self._bound:
            raise ValueError("Semaphore released too many times")
        self._value += n

    def __exit__(self, *exc: Any) -> None:
        self.release()


class ControlledBoundedSemaphore(ControlledSemaphore):
    _kind = "BoundedSemaphore"

    def __init__(self, run: Any, value: int = 1) -> None:
        super().__init__(run, value, bound=value)


class ControlledEvent(_Primitive):
    _kind = "Event"

    def __init__(self, run: Any) -> None:
        super().__init__(run)
        self._flag = False

    def is_set(self) -> bool:
        self._run.schedule(f"is_set {self._name}")
        return self._flag

    isSet = is_set  # noqa: N815

    def set(self) -> None:
        self._run.schedule(f"set {self._name}")
        self._flag = True

    def clear(self) -> None:
        self._run.schedule(f"clear {self._name}")
        self._flag = False

    def wait(self, timeout: float | None = None) -> bool:
        self._run.schedule(f"wait {self._name}", enabled=lambda: self._flag, timeout=_timeout_arg(timeout))
        return self._flag


class ControlledBarrier(_Primitive):
    _kind = "Barrier"

    def __init__(self, run: Any, parties: int, action: Any = None, timeout: float | None = None) -> None:
        super().__init__(run)
        self.parties = parties
        self._action = action
        self._timeout = timeout
        self._count = 0
        self._generation = 0
        self._broken = False

    def wait(self, timeout: float | None = None) -> int:
        if self._broken:
            raise _real_threading.BrokenBarrierError
        generation = self._generation
        index = self._count
        self._run.schedule(f"arrive {self._name}")
        self._count += 1
        if self._count == self.parties:
            if self._action is not None:
                self._action()
            self._count = 0
            self._generation += 1
            return index
        timeout = self._timeout if timeout is None else timeout
        ok = self._run.schedule(
            f"wait {self._name}",
            enabled=lambda: self._generation != generation or self._broken,
            timeout=_timeout_arg(timeout),
        )
        if not ok or self._broken:
            self._broken = True
            raise _real_threading.BrokenBarrierError
        return index

    def abort(self) -> None:
        self._broken = True

    def reset(self) -> None:
        self._broken = False
        self._count = 0
        self._generation += 1

    @property
    def n_waiting(self) -> int:
        return self._count

    @property
    def broken(self) -> bool:
        return self._broken


# ----- factories: controlled inside a run, real elsewhere ----------------------------------------------------------


def Lock() -> Any:  # noqa: N802 - stdlib name
    run = runtime.current_run()
    return ControlledLock(run) if run is not None else _real_Lock()


def RLock() -> Any:  # noqa: N802
    run = runtime.current_run()
    return ControlledRLock(run) if run is not None else _real_RLock()


def Condition(lock: Any = None) -> Any:  # noqa: N802
    run = runtime.current_run()
    return ControlledCondition(run, lock) if run is not None else _real_Condition(lock)


def Event() -> Any:  # noqa: N802
    run = runtime.current_run()
    return ControlledEvent(run) if run is not None else _real_Event()


def Semaphore(value: int = 1) -> Any:  # noqa: N802
    run = runtime.current_run()
    return ControlledSemaphore(run, value) if run is not None else _real_Semaphore(value)


def BoundedSemaphore(value: int = 1) -> Any:  # noqa: N802
    run = runtime.current_run()
    return ControlledBoundedSemaphore(run, value) if run is not None else _real_BoundedSemaphore(value)


def Barrier(parties: int, action: Any = None, timeout: float | None = None) -> Any:  # noqa: N802
    run = runtime.current_run()
    if run is None:
        return _real_Barrier(parties, action, timeout)
    return ControlledBarrier(run, parties, action, timeout)


# ----- queues -------------------------------------------------------------------------------------------------------


class ControlledQueue(_Primitive):
    """queue.Queue with every put/get/inspection a scheduling point."""

    _kind = "Queue"

    def __init__(self, run: Any, maxsize: int = 0) -> None:
        super().__init__(run)
        self.maxsize = maxsize
        self._items: Any = self._new_container()
        self.unfinished_tasks = 0

    def _new_container(self) -> Any:
        return deque()

    def _qput(self, item: Any) -> None:
        self._items.append(item)

    def _qget(self) -> Any:
        return self._items.popleft()

    def _has_room(self) -> bool:
        return self.maxsize <= 0 or len(self._items) < self.maxsize

    def _has_item(self) -> bool:
        return len(self._items) > 0

    def put(self, item: Any, block: bool = True, timeout: float | None = None) -> None:
        if block and timeout is not None and timeout < 0:
            raise ValueError("'timeout' must be a non-negative number")
        ok = self._run.schedule(
            f"put {self._name}", enabled=self._has_room, timeout=_timeout_arg(timeout) if block else 0
        )
        if not ok:
            raise _real_queue.Full
        self._qput(item)
        self.unfinished_tasks += 1

    def get(self, block: bool = True, timeout: float | None = None) -> Any:
        if block and timeout is not None and timeout < 0:
            raise ValueError("'timeout' must be a non-negative number")
        ok = self._run.schedule(
            f"get {self._name}", enabled=self._has_item, timeout=_timeout_arg(timeout) if block else 0
        )
        if not ok:
            raise _real_queue.Empty
        return self._qget()

    def put_nowait(self, item: Any) -> None:
        self.put(item, block=False)

    def get_nowait(self) -> Any:
        return self.get(block=False)

    def task_done(self) -> None:
        self._run.schedule(f"task_done {self._name}")
        if self.unfinished_tasks <= 0:
            raise ValueError("task_done() called too many times")
        self.unfinished_tasks -= 1

    def join(self) -> None:
        self._run.schedule(f"join {self._name}", enabled=lambda: self.unfinished_tasks == 0)

    def qsize(self) -> int:
        self._run.schedule(f"qsize {self._name}")
        return len(self._items)

    def empty(self) -> bool:
        self._run.schedule(f"empty {self._name}")
        return not self._items

    def full(self) -> bool:
        self._run.schedule(f"full {self._name}")
        return not self._has_room()


class ControlledLifoQueue(ControlledQueue):
    _kind = "LifoQueue"

    def _new_container(self) -> Any:
        return []

    def _qget(self) -> Any:
        return self._items.pop()


class ControlledPriorityQueue(ControlledQueue):
    _kind = "PriorityQueue"

    def _new_container(self) -> Any:
        return []

    def _qput(self, item: Any) -> None:
        heapq.heappush(self._items, item)

    def _qget(self) -> Any:
        return heapq.heappop(self._items)


class ControlledSimpleQueue(ControlledQueue):
    _kind = "SimpleQueue"

    def __init__(self, run: Any) -> None:
        super().__init__(run, 0)

    def put(self, item: Any, block: bool = True, timeout: float | None = None) -> None:
        self._run.schedule(f"put {self._name}")
        self._qput(item)


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


# ----- futures and the executor -----------------------------------------------------------------------------------


class Future(_RealFuture):
    """A real ``concurrent.futures.Future`` whose condition is controlled when created inside a run.

    The stdlib methods (result, done, cancel, set_result, callbacks) all go through ``self._condition``, so
    swapping it makes every one of them a scheduling point without re-implementing the Future protocol.
    """

    def __init__(self) -> None:
        super().__init__()
        run = runtime.current_run()
        if run is not None:
            self._condition = ControlledCondition(run, name=run.new_object_id("Future"))
            self._racecheck_run = run


def _future_is_done(future: Any) -> bool:
    return future._state in ("CANCELLED_AND_NOTIFIED", "FINISHED")


def wait(fs: Any, timeout: float | None = None, return_when: str = _ALL_COMPLETED) -> Any:
    run = runtime.current_run()
    if run is None:
        return _real_wait(fs, timeout, return_when)
    futures = list(dict.fromkeys(fs))

    def satisfied() -> bool:
        done = [f for f in futures if _future_is_done(f)]
        if return_when == _FIRST_COMPLETED:
            return bool(done)
        if return_when == _FIRST_EXCEPTION:
            failed = any(f._state == "FINISHED" and f._exception is not None for f in done)
            return failed or len(done) == len(futures)
        return len(done) == len(futures)

    run.schedule("wait futures", enabled=satisfied, timeout=_timeout_arg(timeout))
    done = {f for f in futures if _future_is_done(f)}
    return concurrent.futures._base.DoneAndNotDoneFutures(done, set(futures) - done)


def as_completed(fs: Any, timeout: float | None = None) -> Any:
    run = runtime.current_run()
    if run is None:
        yield from _real_as_completed(fs, timeout)
        return
    pending = list(dict.fromkeys(fs))
    end = None if timeout is None else run.now() + timeout
    while pending:
        remaining = None if end is None else max(end - run.now(), 0.0)
        ok = run.schedule(
            "as_completed futures", enabled=lambda: any(_future_is_done(f) for f in pending), timeout=remaining
        )
        if not ok:
            raise concurrent.futures.TimeoutError(f"{len(pending)} (of {len(pending)}) futures unfinished")
        ready = [f for f in pending if _future_is_done(f)]
        for future in ready:
            pending.remove(future)
            yield future


class _WorkItem:
    __slots__ = ("future", "fn", "args", "kwargs")

    def __init__(self, future: Any, fn: Any, args: Any, kwargs: Any) -> None:
        self.future = future
        self.fn = fn
        self.args = args
        self.kwargs = kwargs

    def run(self) -> None:
        if not self.future.set_running_or_notify_cancel():
            return
        try:
            result = self.fn(*self.args, **self.kwargs)
        except BaseException as exc:  # noqa: BLE001 - delivered through the future, like the stdlib
            self.future.set_exception(exc)
            self = None  # break the reference cycle, as the stdlib does
        else:
            self.future.set_result(result)


# Machine-independent default, so the number of workers (and hence the schedule) is the same everywhere.
DEFAULT_MAX_WORKERS = 8


class ThreadPoolExecutor(concurrent.futures.Executor):
    """A ThreadPoolExecutor whose workers are controlled threads and whose queue is a controlled queue.

    Same observable protocol as the stdlib: workers start lazily on submit while none is idle, up to max_workers;
    shutdown(wait, cancel_futures) puts a sentinel that every worker passes on. Outside a run, constructing one
    returns a real ``concurrent.futures.ThreadPoolExecutor``.
    """

    _counter = itertools.count()

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        if runtime.current_run() is None:
            return _RealTPE(*args, **kwargs)
        return super().__new__(cls)

    def __init__(
        self,
        max_workers: int | None = None,
        thread_name_prefix: str = "",
        initializer: Any = None,
        initargs: tuple = (),
    ) -> None:
        if max_workers is None:
            max_workers = DEFAULT_MAX_WORKERS
        if max_workers <= 0:
            raise ValueError("max_workers must be greater than 0")
        if initializer is not None and not callable(initializer):
            raise TypeError("initializer must be a callable")
        run = runtime.current_run()
        self._run = run
        self._name = run.new_object_id("Executor")
        self._max_workers = max_workers
        self._work_queue = ControlledSimpleQueue(run)
        self._work_queue._name = f"{self._name}.queue"
        self._idle = ControlledSemaphore(run, 0)
        self._idle._name = f"{self._name}.idle"
        self._threads: list[Any] = []
        self._shutdown = False
        self._broken: str | bool = False
        self._shutdown_lock = ControlledLock(run, name=f"{self._name}.lock")
        self._thread_name_prefix = thread_name_prefix or self._name.replace("#", "-")
        self._initializer = initializer
        self._initargs = initargs

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        with self._shutdown_lock:
            if self._broken:
                raise concurrent.futures.thread.BrokenThreadPool(self._broken)
            if self._shutdown:
                raise RuntimeError("cannot schedule new futures after shutdown")
            future = Future()
            self._work_queue.put(_WorkItem(future, fn, args, kwargs))
            self._adjust_thread_count()
            return future

    def _adjust_thread_count(self) -> None:
        if self._idle.acquire(timeout=0):
            return
        if len(self._threads) < self._max_workers:
            worker = _real_threading.Thread(
                name=f"{self._thread_name_prefix}_{len(self._threads)}", target=self._worker, daemon=False
            )
            worker._racecheck_background = True  # an idle worker left at exit is torn down, like atexit does
            worker.start()
            self._threads.append(worker)

    def _worker(self) -> None:
        if self._initializer is not None:
            try:
                self._initializer(*self._initargs)
            except BaseException:  # noqa: BLE001
                self._broken = "A thread initializer failed, the thread pool is not usable anymore"
                return
        while True:
            item = self._work_queue.get(block=True)
            if item is None:
                self._work_queue.put(None)  # pass the sentinel to the next worker
                return
            item.run()
            del item
            self._idle.release()

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._shutdown_lock:
            self._shutdown = True
            if cancel_futures:
                while True:
                    try:
                        item = self._work_queue.get_nowait()
                    except _real_queue.Empty:
                        break
                    if item is not None:
                        item.future.cancel()
            self._work_queue.put(None)
        if wait:
            for worker in self._threads:
                worker.join()


# ----- time on the virtual clock -------------------------------------------------------------------------------------


def sleep(seconds: float) -> None:
    run = runtime.current_run()
    if run is None:
        _real_time.sleep(seconds)
    else:
        run.sleep(seconds)


def _clock(real: Any, scale: float = 1.0, offset: bool = False, integer: bool = False) -> Any:
    def read() -> Any:
        run = runtime.current_run()
        if run is None:
            return real()
        value = run.now() + (run.config.epoch if offset else 0.0)
        return int(value * scale) if integer else value

    read.__name__ = real.__name__
    read.__doc__ = f"Virtual {real.__name__} inside a racecheck run (deterministic), the real clock elsewhere."
    return read


monotonic = _clock(_real_time.monotonic)
monotonic_ns = _clock(_real_time.monotonic_ns, 1e9, integer=True)
perf_counter = _clock(_real_time.perf_counter)
perf_counter_ns = _clock(_real_time.perf_counter_ns, 1e9, integer=True)
time = _clock(_real_time.time, offset=True)
time_ns = _clock(_real_time.time_ns, 1e9, offset=True, integer=True)


# ----- module facades -------------------------------------------------------------------------------------------------


def _facade(real: types.ModuleType, overrides: dict[str, Any]) -> types.ModuleType:
    """A module that answers like ``real`` except for ``overrides``."""
    module = types.ModuleType(real.__name__, getattr(real, "__doc__", None))
    module.__dict__.update(overrides)
    module.__dict__["__racecheck_facade__"] = real

    def __getattr__(name: str) -> Any:  # noqa: N807 - PEP 562 hook
        return getattr(real, name)

    module.__dict__["__getattr__"] = __getattr__
    return module


threading_facade = _facade(
    _real_threading,
    {
        "Lock": Lock, "RLock": RLock, "Condition": Condition, "Event": Event, "Semaphore": Semaphore,
        "BoundedSemaphore": BoundedSemaphore, "Barrier": Barrier,
    },
)
queue_facade = _facade(
    _real_queue, {"Queue": Queue, "LifoQueue": LifoQueue, "PriorityQueue": PriorityQueue, "SimpleQueue": SimpleQueue}
)
futures_facade = _facade(
    concurrent.futures,
    {"ThreadPoolExecutor": ThreadPoolExecutor, "Future": Future, "wait": wait, "as_completed": as_completed},
)
concurrent_facade = _facade(concurrent, {"futures": futures_facade})
time_facade = _facade(
    _real_time,
    {
        "sleep": sleep, "monotonic": monotonic, "monotonic_ns": monotonic_ns, "perf_counter": perf_counter,
        "perf_counter_ns": perf_counter_ns, "time": time, "time_ns": time_ns,
    },
)

for _real_obj, _replacement in [
    (_real_threading, threading_facade),
    (_real_Lock, Lock),
    (_real_RLock, RLock),
    (_real_Condition, Condition),
    (_real_Event, Event),
    (_real_Semaphore, Semaphore),
    (_real_BoundedSemaphore, BoundedSemaphore),
    (_real_Barrier, Barrier),
    (_real_queue, queue_facade),
    (_real_queue.Queue, Queue),
    (_real_queue.LifoQueue, LifoQueue),
    (_real_queue.PriorityQueue, PriorityQueue),
    (_real_queue.SimpleQueue, SimpleQueue),
    (concurrent, concurrent_facade),
    (concurrent.futures, futures_facade),
    (_RealTPE, ThreadPoolExecutor),
    (_RealFuture, Future),
    (_real_wait, wait),
    (_real_as_completed, as_completed),
    (_real_time, time_facade),
    (_real_time.sleep, sleep),
    (_real_time.monotonic, monotonic),
    (_real_time.monotonic_ns, monotonic_ns),
    (_real_time.perf_counter, perf_counter),
    (_real_time.perf_counter_ns, perf_counter_ns),
    (_real_time.time, time),
    (_real_time.time_ns, time_ns),
]:
    instrument.register_swap(_real_obj, _replacement)
