"""The programs of the processes tests: children that share a Queue, a Value, a checkpoint file with the parent.
Module-level functions only, so spawn children can import them."""

import multiprocessing
import os
import shutil
import tempfile


def save_and_report(path, reports):
    with open(path, "w") as f:
        f.write("weights")
    reports.put("saved")


def _evict(path):
    if os.path.exists(path):
        os.remove(path)


def leak(method="spawn"):
    """A child writes epoch=0.ckpt and reports on a queue; the parent evicts that checkpoint before it waits for
    the report: when the eviction looks first, the checkpoint the child writes afterwards is left behind."""
    ctx = multiprocessing.get_context(method)
    root = tempfile.mkdtemp(prefix="racecheck-leak-")
    path = os.path.join(root, "epoch=0.ckpt")
    try:
        reports = ctx.Queue()
        child = ctx.Process(target=save_and_report, args=(path, reports))
        child.start()
        _evict(path)
        assert reports.get() == "saved"
        child.join()
        assert child.exitcode == 0
        assert not os.path.exists(path), "leaked epoch=0.ckpt"
    finally:
        shutil.rmtree(root, ignore_errors=True)


def leak_fixed(method="spawn"):
    """The same, waiting for the report before evicting: clean."""
    ctx = multiprocessing.get_context(method)
    root = tempfile.mkdtemp(prefix="racecheck-leak-")
    path = os.path.join(root, "epoch=0.ckpt")
    try:
        reports = ctx.Queue()
        child = ctx.Process(target=save_and_report, args=(path, reports))
        child.start()
        assert reports.get() == "saved"
        _evict(path)
        child.join()
        assert not os.path.exists(path), "leaked epoch=0.ckpt"
    finally:
        shutil.rmtree(root, ignore_errors=True)


def bump(counter):
    counter.value += 1


def bump_locked(counter):
    with counter.get_lock():
        counter.value += 1


def _two_bumpers(method, target):
    ctx = multiprocessing.get_context(method)
    counter = ctx.Value("i", 0)
    workers = [ctx.Process(target=target, args=(counter,)) for _ in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert counter.value == 2, f"lost update: counter.value == {counter.value}"


def counter(method="fork"):
    """Two processes doing ``counter.value += 1`` on one Value: the lost update multiprocessing's docs warn of."""
    _two_bumpers(method, bump)


def counter_locked(method="fork"):
    _two_bumpers(method, bump_locked)


# Zero-argument forms, named so a token's target names them in any process.
def leak_fork():
    leak("fork")


def leak_spawn():
    leak("spawn")


def leak_fixed_fork():
    leak_fixed("fork")


def counter_fork():
    counter("fork")


def counter_spawn():
    counter("spawn")


def counter_locked_fork():
    counter_locked("fork")


def _take_lock(lock):
    with lock:
        pass


def deadlock_across_processes():
    """The parent holds a multiprocessing Lock and joins a child that needs it: a deadlock in every schedule."""
    ctx = multiprocessing.get_context("fork")
    lock = ctx.Lock()
    child = ctx.Process(target=_take_lock, args=(lock,))
    with lock:
        child.start()
        child.join()


def _echo(conn, other):
    other.close()  # forked: the child holds a copy of the parent's end too, which would keep EOF away
    while True:
        try:
            item = conn.recv()
        except EOFError:
            return
        conn.send(item * 2)


def pipe_echo(method="fork"):
    """Ping-pong over a Pipe; the parent closes its end and the child sees EOF (once its own copy of that end is
    closed too: a child that forgets to close it waits forever, and so does ``pipe_echo_forgetful``)."""
    ctx = multiprocessing.get_context(method)
    here, there = ctx.Pipe()
    child = ctx.Process(target=_echo, args=(there, here))
    child.start()
    there.close()  # the parent's copy only: the child's stays open
    for n in range(3):
        here.send(n)
        assert here.recv() == 2 * n
    assert not here.poll()
    here.close()
    child.join()
    assert child.exitcode == 0


def _fails():
    raise ValueError("from the child")


def child_raises():
    child = multiprocessing.get_context("fork").Process(target=_fails)
    child.start()
    child.join()


def _wait_forever(queue):
    queue.get()


def parent_fails_while_child_waits():
    """The parent fails while a child waits on a queue nobody fills: the child is reaped with the run."""
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_wait_forever, args=(queue,), daemon=True)
    child.start()
    raise RuntimeError(f"parent fails, child pid {child.pid is not None}")


def _echo_forgetful(conn):
    while True:
        try:
            item = conn.recv()
        except EOFError:
            return
        conn.send(item)


def pipe_echo_forgetful():
    ctx = multiprocessing.get_context("fork")
    here, there = ctx.Pipe()
    child = ctx.Process(target=_echo_forgetful, args=(there,))
    child.start()
    there.close()
    here.send(1)
    assert here.recv() == 1
    here.close()
    child.join()


def _save(name, done):
    """The saver: copies the trainer's buffer, then says the buffer is free again."""
    from multiprocessing import shared_memory

    segment = shared_memory.SharedMemory(name=name)
    copy = bytes(segment.buf[:4])
    segment.close()
    done.put(copy)


def _saver_program(method, wait_first):
    from multiprocessing import shared_memory

    ctx = multiprocessing.get_context(method)
    segment = shared_memory.SharedMemory(create=True, size=4)
    try:
        segment.buf[:4] = b"step"
        done = ctx.Queue()
        saver = ctx.Process(target=_save, args=(segment.name, done))
        saver.start()
        if wait_first:
            saved = done.get()
            segment.buf[:4] = b"next"  # the trainer refills the buffer once the saver says it is free
        else:
            segment.buf[:4] = b"next"  # the trainer refills the buffer before the saver says it is free
            saved = done.get()
        saver.join()
        assert saved == b"step", f"the checkpoint holds {saved!r}: the buffer was overwritten while it was read"
    finally:
        segment.close()
        segment.unlink()


def shm_overwrite_fork():
    _saver_program("fork", wait_first=False)


def shm_overwrite_spawn():
    _saver_program("spawn", wait_first=False)


def shm_waits_fork():
    _saver_program("fork", wait_first=True)


_json_lock = None


def _init_worker(lock):
    global _json_lock
    _json_lock = lock


def _rewrite(path, key):
    import json

    with open(path) as f:
        data = json.load(f)
    data[key] = True
    with open(path, "w") as f:
        json.dump(data, f)


def _record(path, key, locked):
    if locked:
        with _json_lock:
            _rewrite(path, key)
    else:
        _rewrite(path, key)
    return key


def _json_workers(locked, pool_kind):
    """Two pool workers each add their key to one JSON file (read, change, rewrite)."""
    import json
    from concurrent.futures import ProcessPoolExecutor

    ctx = multiprocessing.get_context("fork")
    root = tempfile.mkdtemp(prefix="racecheck-json-")
    path = os.path.join(root, "state.json")
    try:
        with open(path, "w") as f:
            f.write("{}")
        lock = ctx.Lock()
        if pool_kind == "executor":
            with ProcessPoolExecutor(2, mp_context=ctx, initializer=_init_worker, initargs=(lock,)) as pool:
                done = list(pool.map(_record, [path, path], ["a", "b"], [locked, locked]))
        else:
            with ctx.Pool(2, _init_worker, (lock,)) as pool:
                done = pool.starmap(_record, [(path, "a", locked), (path, "b", locked)])
        assert done == ["a", "b"]
        with open(path) as f:
            data = json.load(f)
        assert data == {"a": True, "b": True}, f"a worker's update was lost: {data}"
    finally:
        shutil.rmtree(root, ignore_errors=True)


def json_executor():
    _json_workers(False, "executor")


def json_executor_locked():
    _json_workers(True, "executor")


def json_pool():
    _json_workers(False, "pool")


def json_pool_locked():
    _json_workers(True, "pool")


def _rank(rank, counter):
    counter.value += 1


def _torch_ranks(method):
    import torch.multiprocessing as tmp

    counter = multiprocessing.get_context(method).Value("i", 0)
    tmp.start_processes(_rank, args=(counter,), nprocs=2, join=True, start_method=method)
    assert counter.value == 2, f"lost update: counter.value == {counter.value}"


def torch_ranks_fork():
    _torch_ranks("fork")


def torch_ranks_spawn():
    _torch_ranks("spawn")


def _who(report):
    report.put((os.getpid(), multiprocessing.current_process().name))


def names_and_pids():
    """A child's name and pid as the program sees them: the same in every schedule, and not the parent's."""
    ctx = multiprocessing.get_context("fork")
    report = ctx.Queue()
    child = ctx.Process(target=_who, args=(report,))
    child.start()
    pid, name = report.get()
    child.join()
    assert pid != os.getpid()
    raise RuntimeError(f"child {name} pid {pid}")


def _meet(barrier, cond, flags, index):
    barrier.wait()
    with cond:
        flags[index] = 1
        cond.notify_all()


def barrier_and_condition():
    """Two children meet the parent at a Barrier, then each sets its flag under a Condition the parent waits on;
    a Semaphore and a JoinableQueue go along: clean in every schedule."""
    ctx = multiprocessing.get_context("fork")
    barrier, cond, flags = ctx.Barrier(3), ctx.Condition(), ctx.Array("i", 2)
    jobs, slots = ctx.JoinableQueue(), ctx.Semaphore(1)
    children = [ctx.Process(target=_meet, args=(barrier, cond, flags, i)) for i in range(2)]
    for child in children:
        child.start()
    barrier.wait()
    with cond:
        assert cond.wait_for(lambda: flags[0] and flags[1], timeout=60)
    with slots:
        jobs.put("done")
    assert jobs.get() == "done"
    jobs.task_done()
    jobs.join()
    for child in children:
        child.join()
    assert list(flags[:]) == [1, 1]


def counter_forkserver():
    counter("forkserver")


def _grandparent(report):
    ctx = multiprocessing.get_context("fork")
    inner = ctx.Queue()  # the child's own: served by the root (grandchildren)
    grandchild = ctx.Process(target=_who, args=(inner,))
    grandchild.start()
    report.put(type(inner).__module__)
    inner.get()
    grandchild.join()


def grandchild():
    """A child that starts its own child and makes its own queue: both the run's (a process P2, a served queue)."""
    ctx = multiprocessing.get_context("fork")
    report = ctx.Queue()
    child = ctx.Process(target=_grandparent, args=(report,))
    child.start()
    assert report.get() == "racecheck.control.processes.models"
    child.join()
    assert child.exitcode == 0
