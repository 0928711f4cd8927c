"""A ``multiprocessing.Pool`` or ``ProcessPoolExecutor`` made by a thread of the run in a child: its workers are
processes of the run (grandchildren, ``P3 (child of P1)``), as a pool the root makes has children of the run.

The root's pool (``pools``) keeps its futures in the root, where the workers' proxies settle them. A child's
futures are the child's own objects, which the root cannot touch, and the child runs only while one of its
threads holds the baton, so the workers cannot settle them directly. As the standard library's pool does with its
result-handler thread, the child's pool has a collector: a daemon thread of the run in the child that takes each
result from a queue the root serves and settles its future. The task queue and the results queue are the root's
(made as a child's ``Queue()`` is, ``grandchildren.make``), so every take, put and wait of the workers and the
collector is a point of the one scheduler, and a wait on a future is a wait on the child's own object, decided
from the readiness the child reports (``child_threads``). The collector ends when the pool's workers are stopped
(``shutdown``, ``join``, ``terminate``) and, a daemon, with the child otherwise.
"""

from __future__ import annotations

import threading
from typing import Any

from racecheck.control.processes import grandchildren, pools

__racecheck_engine__ = True


class Results:
    """What a worker of a child's pool settles through (pickled to it): a put on the results queue."""

    def __init__(self, queue: Any) -> None:
        self.queue = queue

    def settle(self, task: int, ok: bool, value: Any) -> None:
        self.queue.put((task, ok, value))


def _collect(results: Any, table: Any) -> None:
    """The collector's body: settle each result's future here, until the end (None)."""
    while True:
        item = results.get()
        if item is None:
            return
        table.resolve(*item)


class Collector:
    """A child's pool's queues (the root's) and its collector thread."""

    def __init__(self, run: Any, table: Any) -> None:
        self.tasks = grandchildren.make(run, "Queue", (), {})
        self.results = grandchildren.make(run, "Queue", (), {})
        self.settler = Results(self.results)
        self.thread = threading.Thread(target=_collect, args=(self.results, table), name="pool-collector",
                                       daemon=True)
        self.started = False

    def start(self) -> None:
        self.thread.start()
        self.started = True

    def stop(self) -> None:
        if self.started:
            self.results.put(None)
            self.thread.join()
            self.started = False


pools.CHILD_POOLS.append(Collector)
