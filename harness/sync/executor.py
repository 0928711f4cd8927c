"""ThreadPoolExecutor whose workers are controlled threads and whose work queue is a controlled queue.

Same observable protocol as the stdlib: workers start lazily on submit while none is idle, up to max_workers;
a failing initializer breaks the pool (pending futures get BrokenThreadPool, later submits raise it);
shutdown(wait, cancel_futures) cancels what is queued and puts a sentinel that every worker passes on. The default
size is fixed (8), not derived from ``os.cpu_count()``, so schedules are the same on every machine. Outside a run,
constructing one returns a real ``concurrent.futures.ThreadPoolExecutor``.
"""

from __future__ import annotations

import concurrent.futures
import concurrent.futures._base as _futures_base
import concurrent.futures.thread
import queue as _real_queue
import threading as _real_threading
from typing import Any

from racecheck import runtime
from racecheck.runtime.access import ENTRY, MEMORY, WRITE, Obj, ObjKind, on
from racecheck.runtime.locations import thread_bottom
from racecheck.sync.futures import Future, callbacks_of, has_callbacks
from racecheck.sync.locks import ControlledLock
from racecheck.sync.work_queue import WorkQueue

__racecheck_engine__ = True


def touch(access: tuple) -> None:
    """The calling controlled thread's running step also touches ``access``."""
    run = runtime.thread_state.run
    if run is not None:
        run.touch(access)

_RealTPE = concurrent.futures.ThreadPoolExecutor
BrokenThreadPool = concurrent.futures.thread.BrokenThreadPool

# Machine-independent default, so the number of workers (and hence the schedule) is the same everywhere.
DEFAULT_MAX_WORKERS = 8


def _unwatched() -> bool:
    """Whether the calling thread's run does not watch plain memory (then code between points is unknown)."""
    run = runtime.current_run()
    return run is None or getattr(run, "watch", None) is None


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
        # The work item's code runs between two of the pool's own points, which the program cannot see to put a
        # racecheck.point next to: unless its memory is watched, the step that runs it counts as touching plain
        # shared memory, and so does the one that runs the future's done callbacks.
        runtime.reach(self.fn)
        unwatched = _unwatched()
        if unwatched:
            touch(MEMORY)
        try:
            result = self.fn(*self.args, **self.kwargs)
        except BaseException as exc:  # noqa: BLE001 - delivered through the future, like the stdlib
            callbacks = has_callbacks(self.future)
            for callback in callbacks_of(self.future) if callbacks else ():
                runtime.reach(callback)
            self.future.set_exception(exc)
            self = None  # break the reference cycle, as the stdlib does
        else:
            callbacks = has_callbacks(self.future)
            for callback in callbacks_of(self.future) if callbacks else ():
                runtime.reach(callback)
            self.future.set_result(result)
        if callbacks and unwatched:
            touch(MEMORY)


class ThreadPoolExecutor(concurrent.futures.Executor):
    """A ThreadPoolExecutor for controlled threads; see the module docstring."""

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
        run.new_object_id("SimpleQueue")  # counted as it always was, so that later queues keep their numbers
        self._work_queue = WorkQueue(run, name=Obj(ObjKind.FIFO_QUEUE, f"{self._name}.queue", engine=True))
        self._idle = 0  # workers waiting for work (the stdlib's idle semaphore; checked without a point)
        self._threads: list[Any] = []
        self._shutdown = False
        self._broken: str | bool = False
        self._shutdown_lock = ControlledLock(run, name=Obj(ObjKind.LOCK, f"{self._name}.lock", engine=True))
        # The idle count is read (and taken from) by submit after its put and raised by a worker after a work item,
        # in steps that name other objects: both touch it, so the search orders a submit against each raise. Two
        # raises commute (``entry``: each adds one), so the order in which workers finish is not explored for it.
        idle = Obj(ObjKind.ENGINE_STATE, f"{self._name}.idle", engine=True)
        self._idle_access, self._idle_raise = on(idle, WRITE), on(idle, ENTRY)
        self._thread_name_prefix = thread_name_prefix or self._name.replace("#", "-")
        self._initializer = initializer
        self._initargs = initargs

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        with self._shutdown_lock:
            if self._broken:
                raise BrokenThreadPool(self._broken)
            if self._shutdown:
                raise RuntimeError("cannot schedule new futures after shutdown")
            future = Future()
            runtime.reach(fn, (*args, *kwargs.values()))
            self._work_queue.put(_WorkItem(future, fn, args, kwargs))
            self._adjust_thread_count()
            return future

    def _adjust_thread_count(self) -> None:
        self._run.touch(self._idle_access)
        if self._idle > 0:
            self._idle -= 1
            return
        if len(self._threads) < self._max_workers:
            worker = _real_threading.Thread(
                name=f"{self._thread_name_prefix}_{len(self._threads)}", target=self._worker, daemon=False
            )
            worker._racecheck_background = True  # an idle worker left at exit is torn down, like atexit does
            worker.start()
            self._threads.append(worker)

    @thread_bottom
    def _worker(self) -> None:
        if self._initializer is not None:
            runtime.reach(self._initializer)
            if _unwatched():
                touch(MEMORY)  # the program's initializer, as a work item's code
            try:
                self._initializer(*self._initargs)
            except BaseException:  # noqa: BLE001 - reported and the pool is broken, as in the stdlib
                _futures_base.LOGGER.critical("Exception in initializer:", exc_info=True)
                self._initializer_failed()
                return
        while True:
            item = self._work_queue.get_work()
            if item is None:  # the sentinel, left in the queue for the next worker (the stdlib puts it back)
                self._shutdown = True
                return
            item.run()
            del item
            self._idle += 1
            self._run.touch(self._idle_raise)

    def _initializer_failed(self) -> None:
        with self._shutdown_lock:
            self._broken = "A thread initializer failed, the thread pool is not usable anymore"
            for item in self._drain():
                item.future.set_exception(BrokenThreadPool(self._broken))

    def _drain(self) -> list[Any]:
        items = []
        while True:
            try:
                item = self._work_queue.get_nowait()
            except _real_queue.Empty:
                return items
            if item is not None:
                items.append(item)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._shutdown_lock:
            self._shutdown = True
            if cancel_futures:
                for item in self._drain():
                    item.future.cancel()
            self._work_queue.put(None)
        if wait:
            for worker in self._threads:
                worker.join()
