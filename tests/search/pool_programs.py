"""Small generated programs over a ``ThreadPoolExecutor``, for the soundness test of the executor's reduction
(test_pool_soundness.py).

A program is (workers, how the main thread collects, items): each item a tuple of operations a work item runs on
state the test function makes afresh in every schedule (a dict ``c`` behind one lock, and outside it), with no
``racecheck.point()``: only what memory watching sees. Every work item records which worker ran it and what it
saw; the outcome is those records, the state left, the futures' results and how many workers the pool started
(a submit starts one only while none is idle), kept in the run's resources.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor, as_completed

import racecheck

ITEM_OPS = (
    "locked_inc",  # with lock: c["n"] += 1 (critical sections that conflict)
    "locked_read",  # with lock: read c["n"]
    "locked_own",  # with lock: c[own key] = 1 (critical sections that commute with each other's)
    "plain_inc",  # c["m"] += 1 without the lock: a lost update
    "plain_read",  # read c["m"] without the lock
    "try_inc",  # lock.acquire(blocking=False): c["n"] += 1 if it got it
    "nested_submit",  # submit a locked_inc from inside a work item
    "rlock_inc",  # with rlock: with rlock: c["r"] += 1
)
COLLECT = ("map", "result_in_order", "as_completed", "shutdown_first")


def make_test(program: tuple):
    """The test function of ``program`` = (workers, collect, items)."""
    workers, collect, items = program

    def test() -> None:
        lock = threading.Lock()
        rlock = threading.RLock()
        c = {"n": 0, "m": 0, "r": 0}
        records: list = []
        inner: list = []

        def run_item(index: int) -> object:
            seen = [threading.current_thread().name]
            for op in items[index]:
                if op == "locked_inc":
                    with lock:
                        c["n"] += 1
                elif op == "locked_read":
                    with lock:
                        seen.append(c["n"])
                elif op == "locked_own":
                    with lock:
                        c[f"own{index}"] = 1
                elif op == "plain_inc":
                    c["m"] += 1
                elif op == "plain_read":
                    seen.append(c["m"])
                elif op == "try_inc":
                    if lock.acquire(blocking=False):
                        c["n"] += 1
                        lock.release()
                    else:
                        seen.append("busy")
                elif op == "nested_submit":
                    try:
                        inner.append(pool.submit(run_item_locked))
                    except RuntimeError:
                        seen.append("shut")
                elif op == "rlock_inc":
                    with rlock:
                        with rlock:
                            c["r"] += 1
            records.append((index, tuple(seen)))
            return index

        def run_item_locked() -> str:
            with lock:
                c["n"] += 1
            return threading.current_thread().name

        pool = ThreadPoolExecutor(max_workers=workers)
        results: list = []
        if collect == "map":
            results = list(pool.map(run_item, range(len(items))))
            pool.shutdown()
        elif collect == "shutdown_first":
            futures = [pool.submit(run_item, k) for k in range(len(items))]
            pool.shutdown(wait=True)
            results = [f.result() for f in futures]
        else:
            futures = [pool.submit(run_item, k) for k in range(len(items))]
            done = as_completed(futures) if collect == "as_completed" else futures
            results = [f.result() for f in done]
            pool.shutdown()
        nested = sorted(f.result() for f in inner if f.done() and not f.cancelled())
        outcome = (sorted(records), sorted(c.items()), results, nested, len(pool._threads))
        racecheck.runtime.current_run().resources["outcome"] = repr(outcome)

    return test
