"""``concurrent.futures.ProcessPoolExecutor`` and ``multiprocessing.Pool`` for a controlled caller: worker
processes that are children of the run.

The stdlib's pools talk to their workers through a management thread, its own locks and real futures: plumbing
the run cannot order, so a test waiting on a result used to end as uncontrolled blocking. Here a pool is a served
queue of tasks, worker processes started as children of the run (each a loop: take a task, run it, settle its
future), and the table of the pool's futures (``Tasks``), settled by the worker's proxy in the parent: a controlled
``Future`` whose waits are points like a thread pool's. Tasks and results cross as pickles, as with the real pools.
Workers start with the first task, ``max_workers`` (or the CPU count) of them.
"""

from __future__ import annotations

import multiprocessing
import os
from typing import Any

from racecheck.control.processes.link import portable, routed
from racecheck.control.processes.models import ProcessQueue, Served
from racecheck.runtime import RunContract
from racecheck.sync.futures import Future

__racecheck_engine__ = True

# How a pool made by a thread of the run in a child gets its queues and collector (``child_pools.Collector``,
# registered there: this module cannot import the grandchildren's side). Empty: a child's pool is not served.
CHILD_POOLS: list[Any] = []


class Tasks(Served):
    """A pool's futures by task number, settled by the workers (a request their proxies perform here)."""

    def __init__(self, run: RunContract) -> None:
        self.futures: dict[int, Any] = {}
        self.made = 0
        self.enrol(run, run.new_object_id("mp.tasks"))

    def add(self, future: Any) -> int:
        self.made += 1
        self.futures[self.made] = future
        return self.made

    def resolve(self, task: int, ok: bool, value: Any) -> None:
        future = self.futures.pop(task)
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value)

    settle = routed(resolve)  # a worker's call, performed where the futures are (a child's pool: ``child_pools``)


def work(tasks: Any, table: Tasks, initializer: Any, initargs: tuple) -> None:
    """A worker process's loop (in the child): take a task, run it, settle its future; None ends it."""
    if initializer is not None:
        initializer(*initargs)
    while True:
        item = tasks.get()
        if item is None:
            return
        task, fn, args, kwargs = item
        try:
            value, ok = fn(*args, **kwargs), True
        except BaseException as exc:  # noqa: BLE001 - the future carries it
            value, ok = portable(exc), False
        table.settle(task, ok, value)


class WorkerPool:
    """What both pools share: the task queue, the futures, the workers."""

    def __init__(self, run: RunContract, workers: int | None, context: Any, initializer: Any, initargs: tuple) -> None:
        if workers is not None and workers <= 0:
            raise ValueError("max_workers must be greater than 0")
        self.run = run
        self.context = context if context is not None else multiprocessing.get_context()
        self.count = workers or os.cpu_count() or 1
        self.table = Tasks(run)
        # a child's pool: the root's queues, the futures here, settled by a collector thread (``CHILD_POOLS``)
        self.collector = CHILD_POOLS[0](run, self.table) if getattr(run, "in_child", False) and CHILD_POOLS else None
        self.tasks = ProcessQueue(run) if self.collector is None else self.collector.tasks
        self.initializer, self.initargs = initializer, tuple(initargs)
        self.workers: list[Any] = []
        self.closed = False

    def submit_task(self, fn: Any, args: tuple, kwargs: dict) -> Any:
        if not self.workers:
            settler = self.table if self.collector is None else self.collector.settler
            for _ in range(self.count):
                worker = self.context.Process(target=work, args=(self.tasks, settler, self.initializer,
                                                                 self.initargs), daemon=True)
                worker.start()
                self.workers.append(worker)
            if self.collector is not None:
                self.collector.start()
        future = Future()
        self.tasks.put((self.table.add(future), fn, args, kwargs))
        return future

    def stop_workers(self, wait: bool) -> None:
        for _ in self.workers:
            self.tasks.put(None)
        if wait:
            for worker in self.workers:
                worker.join()
            self.stop_collector()

    def stop_collector(self) -> None:
        """A child's pool whose workers are gone: its collector reads the end and stops."""
        if self.collector is not None and self.workers:
            self.collector.stop()


class ProcessPoolExecutor(WorkerPool):
    """``concurrent.futures.ProcessPoolExecutor`` with workers of the run."""

    def __init__(self, run: RunContract, max_workers: int | None = None, mp_context: Any = None,
                 initializer: Any = None, initargs: tuple = (), **_: Any) -> None:
        super().__init__(run, max_workers, mp_context, initializer, initargs)

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        if self.closed:
            raise RuntimeError("cannot schedule new futures after shutdown")
        return self.submit_task(fn, args, kwargs)

    def map(self, fn: Any, *iterables: Any, timeout: float | None = None, chunksize: int = 1) -> Any:
        futures = [self.submit(fn, *args) for args in zip(*iterables, strict=False)]

        def results() -> Any:
            for future in futures:
                yield future.result(timeout)

        return results()

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        if cancel_futures:
            for future in list(self.table.futures.values()):
                future.cancel()
        if not self.closed:
            self.closed = True
            self.stop_workers(wait)

    def __enter__(self) -> ProcessPoolExecutor:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.shutdown(wait=True)


class AsyncResult:
    """``multiprocessing.pool.AsyncResult`` over a controlled future (or a list of them, for ``map_async``)."""

    def __init__(self, futures: list[Any], single: bool) -> None:
        self.futures = futures
        self.single = single

    def get(self, timeout: float | None = None) -> Any:
        try:
            values = [future.result(timeout) for future in self.futures]
        except TimeoutError:
            raise multiprocessing.TimeoutError from None
        return values[0] if self.single else values

    def wait(self, timeout: float | None = None) -> None:
        for future in self.futures:
            try:
                future.exception(timeout)
            except TimeoutError:
                return

    def ready(self) -> bool:
        return all(future.done() for future in self.futures)

    def successful(self) -> bool:
        if not self.ready():
            raise ValueError(f"{self!r} not ready")
        return all(future.exception() is None for future in self.futures)


class Pool(WorkerPool):
    """``multiprocessing.Pool`` with workers of the run (``chunksize`` is taken as 1)."""

    def __init__(self, run: RunContract, processes: int | None = None, initializer: Any = None, initargs: tuple = (),
                 maxtasksperchild: int | None = None, context: Any = None) -> None:
        super().__init__(run, processes, context, initializer, initargs)

    def _submit(self, fn: Any, args: tuple, kwds: dict) -> Any:
        if self.closed:
            raise ValueError("Pool not running")
        return self.submit_task(fn, args, kwds)

    def apply_async(self, func: Any, args: tuple = (), kwds: dict | None = None, callback: Any = None,
                    error_callback: Any = None) -> AsyncResult:
        future = self._submit(func, tuple(args), dict(kwds or {}))
        if callback is not None or error_callback is not None:
            def done(f: Any) -> None:
                if f.exception() is None:
                    if callback is not None:
                        callback(f.result())
                elif error_callback is not None:
                    error_callback(f.exception())

            future.add_done_callback(done)
        return AsyncResult([future], single=True)

    def apply(self, func: Any, args: tuple = (), kwds: dict | None = None) -> Any:
        return self.apply_async(func, args, kwds).get()

    def map_async(self, func: Any, iterable: Any, chunksize: int | None = None, callback: Any = None,
                  error_callback: Any = None) -> AsyncResult:
        return AsyncResult([self._submit(func, (item,), {}) for item in iterable], single=False)

    def map(self, func: Any, iterable: Any, chunksize: int | None = None) -> list[Any]:
        return self.map_async(func, iterable).get()

    def starmap(self, func: Any, iterable: Any, chunksize: int | None = None) -> list[Any]:
        return AsyncResult([self._submit(func, tuple(args), {}) for args in iterable], single=False).get()

    def imap(self, func: Any, iterable: Any, chunksize: int = 1) -> Any:
        futures = [self._submit(func, (item,), {}) for item in iterable]
        return (future.result() for future in futures)

    imap_unordered = imap

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.stop_workers(wait=False)

    def terminate(self) -> None:
        self.closed = True
        for worker in self.workers:
            worker.terminate()
        self.stop_collector()

    def join(self) -> None:
        if not self.closed:
            raise ValueError("Pool is still running")
        for worker in self.workers:
            worker.join()
        self.stop_collector()

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.terminate()
