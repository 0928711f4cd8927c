"""Programs whose child's threads share a lock the child did not make: a ``threading.Lock`` the parent's thread
made before the fork (a stand-in of the parent's run, copied), and one made at import, before any run (real).
Module-level functions only."""

import multiprocessing
import threading

_MADE_BEFORE = threading.Lock()  # made at import, before any run: a real lock


def _two_threads(reports, lock):
    counts = {"n": 0}

    def bump():
        if lock is None:
            counts["n"] += 1
            return
        with lock:
            counts["n"] += 1

    workers = [threading.Thread(target=bump) for _ in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    reports.put(counts["n"])


def _child_counts(lock):
    ctx = multiprocessing.get_context("fork")
    reports = ctx.Queue()
    child = ctx.Process(target=_two_threads, args=(reports, lock))
    child.start()
    with lock if lock is not None else _MADE_BEFORE:  # the parent uses its lock too: not the child's copy
        pass
    count = reports.get()
    child.join()
    assert count == 2, f"lost update in the child: {count}"


def parents_lock():
    """The parent's thread makes the lock, then forks: the child's two threads count under the child's copy."""
    _child_counts(threading.Lock())


def parents_rlock():
    _child_counts(threading.RLock())


def unlocked():
    _child_counts(None)


def real_lock():
    """A lock made before the run: real in the child too, its critical sections ordered for the data-race report."""
    _child_counts(_MADE_BEFORE)


def parents_lock_shown():
    """``parents_lock``, failing at its end on purpose: its trace shows the lock operations of both processes."""
    parents_lock()
    raise AssertionError("shown")


def _two_threads_module_lock(reports):
    _two_threads(reports, _MADE_BEFORE)


def real_lock_spawn():
    """A spawned child's threads count under a lock its module made at import, before the child's run: real."""
    ctx = multiprocessing.get_context("spawn")
    reports = ctx.Queue()
    child = ctx.Process(target=_two_threads_module_lock, args=(reports,))
    child.start()
    count = reports.get()
    child.join()
    assert count == 2, f"lost update in the child: {count}"
