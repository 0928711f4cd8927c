"""The processes tests' programs with several threads in a child: a lost update on the child's own plain memory
between two of its threads, its locked twin, and the stdlib executor in a child. Module-level functions only, so
spawn children can import them."""

import multiprocessing
import threading
from concurrent.futures import ThreadPoolExecutor


def two_threads(reports, locked):
    counts = {"n": 0}
    lock = threading.RLock() if locked == "reentrant" else threading.Lock()

    def bump():
        if locked == "reentrant":
            with lock, lock:  # its owner is the thread of the child that took it
                counts["n"] += 1
        elif locked:
            with lock:
                counts["n"] += 1
        else:
            counts["n"] += 1

    workers = [threading.Thread(target=bump) for _ in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    reports.put(counts["n"])


def lost_update(method="fork", locked=False):
    """Two threads of one child do ``counts["n"] += 1`` on the child's own dict; the child reports the count."""
    ctx = multiprocessing.get_context(method)
    reports = ctx.Queue()
    child = ctx.Process(target=two_threads, args=(reports, locked))
    child.start()
    count = reports.get()
    child.join()
    assert count == 2, f"lost update in the child: {count}"


def lost_update_fork():
    lost_update("fork")


def lost_update_spawn():
    lost_update("spawn")


def locked_fork():
    lost_update("fork", locked=True)


def rlocked_fork():
    lost_update("fork", locked="reentrant")


def doubled(reports):
    with ThreadPoolExecutor(max_workers=2) as pool:
        reports.put(sorted(pool.map(lambda x: x * 2, [1, 2, 3])))


def executor_in_child():
    ctx = multiprocessing.get_context("fork")
    reports = ctx.Queue()
    child = ctx.Process(target=doubled, args=(reports,))
    child.start()
    got = reports.get()
    child.join()
    assert got == [2, 4, 6], got


_MADE_BEFORE = threading.Lock()  # made at import, before any run: a real lock


def two_threads_real_lock(reports):
    counts = {"n": 0}

    def bump():
        with _MADE_BEFORE:
            counts["n"] += 1

    workers = [threading.Thread(target=bump) for _ in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    reports.put(counts["n"])


def real_lock_fork():
    """Two threads of a child update a dict inside a real lock's critical section: no point inside it, so no
    thread of the child blocks on the real lock for real."""
    ctx = multiprocessing.get_context("fork")
    reports = ctx.Queue()
    child = ctx.Process(target=two_threads_real_lock, args=(reports,))
    child.start()
    count = reports.get()
    child.join()
    assert count == 2, count
