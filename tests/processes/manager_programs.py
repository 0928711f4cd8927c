"""The Manager tests' programs: children sharing a ``Manager().dict()`` (the lost update and its locked twin), a
manager's list, queue and event across processes. Module-level functions only, so spawn children can import them."""

import multiprocessing


def bump(counts):
    counts["n"] += 1


def bump_locked(counts, lock):
    with lock:
        counts["n"] += 1


def _two_bumpers(method, locked):
    ctx = multiprocessing.get_context(method)
    with ctx.Manager() as manager:
        counts = manager.dict(n=0)
        lock = manager.Lock()
        target, args = (bump_locked, (counts, lock)) if locked else (bump, (counts,))
        workers = [ctx.Process(target=target, args=args) for _ in range(2)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        assert counts["n"] == 2, f"lost update: counts['n'] == {counts['n']}"


def dict_fork():
    """Two processes doing ``d["n"] += 1`` on one manager dict: a read and a write each, a lost update."""
    _two_bumpers("fork", False)


def dict_spawn():
    _two_bumpers("spawn", False)


def dict_locked_fork():
    _two_bumpers("fork", True)


def _report(results, queue, done, index):
    results.append(index)
    queue.put(index * 10)
    done.wait()


def list_queue_event():
    """Children append to a manager list and put on its queue, then wait on its event: no race, and every item
    seen."""
    ctx = multiprocessing.get_context("fork")
    manager = ctx.Manager()
    results, queue, done = manager.list(), manager.Queue(), manager.Event()
    workers = [ctx.Process(target=_report, args=(results, queue, done, i)) for i in range(2)]
    for worker in workers:
        worker.start()
    got = sorted(queue.get() for _ in workers)
    done.set()
    for worker in workers:
        worker.join()
    assert got == [0, 10], got
    assert sorted(results) == [0, 1], list(results)
    manager.shutdown()


def direct_sync_manager():
    """A ``SyncManager`` built directly is not served: its real server process is named among the escapes."""
    from multiprocessing.managers import SyncManager

    manager = SyncManager(ctx=multiprocessing.get_context("fork"))
    manager.start()
    try:
        counts = manager.dict(n=0)
        counts["n"] += 1
        assert counts["n"] == 1
    finally:
        manager.shutdown()


def manager_pool():
    multiprocessing.Manager().Pool(2)


def _bump_attribute(namespace):
    namespace.x += 1


def namespace_fork():
    """Two processes doing ``ns.x += 1`` on a manager's Namespace: a lost update on its attribute."""
    ctx = multiprocessing.get_context("fork")
    namespace = ctx.Manager().Namespace(x=0)
    workers = [ctx.Process(target=_bump_attribute, args=(namespace,)) for _ in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert namespace.x == 2, f"lost update: namespace.x == {namespace.x}"


def _bump_item(array):
    array[0] += 1


def array_fork():
    """Not a manager's: a served ``multiprocessing.Array``, whose items are its own points too."""
    ctx = multiprocessing.get_context("fork")
    array = ctx.Array("i", [0, 0])
    workers = [ctx.Process(target=_bump_item, args=(array,)) for _ in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert array[0] == 2, f"lost update: array[0] == {array[0]}"
