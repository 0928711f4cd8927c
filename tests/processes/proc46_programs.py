"""Programs of the procs46 tests: ``multiprocessing.connection.wait`` on a grandchild's sentinel and on served
Pipe ends, in a child and in the root. Module-level functions only, so spawn children can import them."""

import multiprocessing
import os
from multiprocessing.connection import wait

import racecheck.fakefs


def _save(path, end):
    with open(path, "w") as f:
        f.write("weights")
    end.send("saved")


def _middle_waits_sentinel(path, reports):
    """The child: starts the grandchild that writes the checkpoint, waits on its sentinel, then reports."""
    ctx = multiprocessing.get_context("fork")
    here, there = ctx.Pipe()
    saver = ctx.Process(target=_save, args=(path, there))
    saver.start()
    assert wait([saver.sentinel]) == [saver.sentinel]
    assert saver.exitcode == 0, saver.exitcode
    assert here.recv() == "saved"
    reports.put("saved")


def sentinel_wait():
    """The root evicts only after the child's report, which the child sends once the grandchild's sentinel is
    ready: clean (and the wait is a point: a real wait would hang, the grandchild needing the baton)."""
    ctx = multiprocessing.get_context("fork")
    path = os.path.join(racecheck.fakefs.root(), "epoch=0.ckpt")
    reports = ctx.Queue()
    child = ctx.Process(target=_middle_waits_sentinel, args=(path, reports))
    child.start()
    assert reports.get() == "saved"
    os.remove(path)
    child.join()
    assert child.exitcode == 0


def _say_then_stay(end, go):
    end.send("hello")
    go.wait()


def _middle_mixed(reports):
    """The child: waits on a served end and its grandchild's sentinel at once. The grandchild sends, then waits
    for the child's event: the end is ready first, the sentinel only after the event."""
    ctx = multiprocessing.get_context("fork")
    here, there = ctx.Pipe()
    go = ctx.Event()
    kid = ctx.Process(target=_say_then_stay, args=(there, go))
    kid.start()
    first = wait([kid.sentinel, here])
    assert first == [here], first  # the grandchild cannot end before go is set
    assert here.recv() == "hello"
    assert wait([kid.sentinel, here], timeout=0) == []  # nothing ready now: a poll
    go.set()
    assert wait([kid.sentinel]) == [kid.sentinel]
    kid.join()
    reports.put(kid.exitcode)


def mixed_wait():
    ctx = multiprocessing.get_context("fork")
    reports = ctx.Queue()
    child = ctx.Process(target=_middle_mixed, args=(reports,))
    child.start()
    assert reports.get() == 0
    child.join()


def _wait_for_go(go):
    go.wait()


def _middle_stuck():
    """The child waits on its grandchild's sentinel; the grandchild waits for an event nobody sets."""
    ctx = multiprocessing.get_context("fork")
    go = ctx.Event()
    kid = ctx.Process(target=_wait_for_go, args=(go,))
    kid.start()
    wait([kid.sentinel])


def stuck_wait():
    child = multiprocessing.get_context("fork").Process(target=_middle_stuck)
    child.start()
    child.join()


def _send_one(end):
    end.send("x")


def root_mixed_wait():
    """The root waits on a served end and a child's sentinel: the end may be ready before the child ends, never
    the sentinel before the end (the child sends, then returns)."""
    ctx = multiprocessing.get_context("fork")
    here, there = ctx.Pipe()
    child = ctx.Process(target=_send_one, args=(there,))
    child.start()
    ready = wait([child.sentinel, here])
    assert here in ready, ready
    assert here.recv() == "x"
    child.join()


# ----- Manager().Array and register ---------------------------------------------------------------------------------


def _bump_first(items, lock):
    if lock is None:
        items[0] += 1
    else:
        with lock:
            items[0] += 1


def _two_bumps(locked):
    ctx = multiprocessing.get_context("fork")
    with ctx.Manager() as manager:
        items = manager.Array("i", [0, 0])
        lock = manager.Lock() if locked else None
        kids = [ctx.Process(target=_bump_first, args=(items, lock)) for _ in range(2)]
        for kid in kids:
            kid.start()
        for kid in kids:
            kid.join()
        assert items[0] == 2, f"lost update: items[0] == {items[0]}"


def manager_array_lost_update():
    _two_bumps(False)


def manager_array_locked():
    _two_bumps(True)


class Model:
    def __init__(self):
        self.n = 0


def manager_registered_type():
    """A SyncManager subclass with a type of its own: its server runs for real, named with the type."""
    from multiprocessing.managers import SyncManager

    class Models(SyncManager):
        pass

    Models.register("Model", Model)
    manager = Models(ctx=multiprocessing.get_context("fork"))
    manager.start()
    manager.shutdown()



# ----- a child's pools ----------------------------------------------------------------------------------------------


def _in_a_child(name):
    """The root starts one child, which runs ``programs.<name>`` (its pool's workers rewrite one JSON file)."""
    import programs

    child = multiprocessing.get_context("fork").Process(target=getattr(programs, name))
    child.start()
    child.join()
    assert child.exitcode == 0, f"the child failed: exit code {child.exitcode}"


def child_executor_json():
    _in_a_child("json_executor")


def child_executor_json_locked():
    _in_a_child("json_executor_locked")


def child_pool_json():
    _in_a_child("json_pool")


def child_pool_json_locked():
    _in_a_child("json_pool_locked")


def _square(x):
    return x * x


def _pool_left_open():
    pool = multiprocessing.get_context("fork").Pool(2)
    assert pool.apply(_square, (3,)) == 9  # never closed: the child ends, its daemon workers terminated


def child_pool_left_open():
    child = multiprocessing.get_context("fork").Process(target=_pool_left_open)
    child.start()
    child.join()
    assert child.exitcode == 0, child.exitcode


def spawned_child_executor_json():
    """The same from a spawned child (a fresh interpreter, its patches installed there)."""
    import programs

    child = multiprocessing.get_context("spawn").Process(target=programs.json_executor)
    child.start()
    child.join()
    assert child.exitcode == 0, f"the child failed: exit code {child.exitcode}"
