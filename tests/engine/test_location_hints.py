"""The ``skip`` hints that make finding a trace's source line cheap never change the line found.

Every scheduling point records the innermost frame of the code under test. Primitives tell the scheduler how many
of the frames above them are certainly the engine's (``schedule(..., skip=n)``) so ``sys._getframe`` can jump over
them without creating frame objects. A hint that overshoots would silently name the wrong line (or an engine line)
in every trace. Here every location lookup of real explorations is done twice, once with the hint and once by
walking from the scheduler's direct caller, and the two must agree, over every primitive, the executor, ``with``
blocks, subclasses that call ``super()``, the fake filesystem and Lightning's stock async plugin.
"""

from __future__ import annotations

import concurrent.futures
import os
import queue
import threading

import classic_bugs
import pytest
import racecheck
import racecheck.fakefs
from racecheck.runtime import scheduler


@pytest.fixture
def checked_locations(monkeypatch):
    """Replace the scheduler's location lookup by one that also walks the whole way and records disagreements."""
    real = scheduler.caller_location
    seen: list[str] = []
    mismatches: list[tuple[str, str]] = []

    def checking(depth: int = 2) -> str:
        hinted = real(depth + 1)  # one more frame: this wrapper
        walked = real(3)  # from the scheduler's direct caller, through every frame
        seen.append(hinted)
        if hinted != walked:
            mismatches.append((hinted, walked))
        return hinted

    monkeypatch.setattr(scheduler, "caller_location", checking)
    return seen, mismatches


class CountingLock:
    """A user wrapper around a lock: the user's line is inside ``acquire`` here, not at the caller."""

    def __init__(self):
        self.inner = threading.Lock()
        self.count = 0

    def acquire(self):
        self.inner.acquire()
        self.count += 1

    def release(self):
        self.inner.release()


class NamedQueue(queue.Queue):
    def put(self, item, block=True, timeout=None):
        super().put(item, block, timeout)


def every_primitive():
    lock, rlock, sem, bsem = threading.Lock(), threading.RLock(), threading.Semaphore(1), threading.BoundedSemaphore(1)
    cond, event, barrier = threading.Condition(), threading.Event(), threading.Barrier(2)
    queues = [queue.Queue(), queue.LifoQueue(), queue.PriorityQueue(), queue.SimpleQueue(), NamedQueue()]
    wrapper = CountingLock()
    box = []

    def worker():
        with lock:
            box.append(1)
        with rlock, rlock:
            box.append(2)
        sem.acquire()
        sem.release()
        with bsem:
            pass
        with cond:
            cond.notify_all()
        event.set()
        barrier.wait()
        for q in queues:
            q.put(3)
        wrapper.acquire()
        wrapper.release()
        lock.acquire(blocking=False) and lock.release()
        racecheck.point("worker done")

    t = threading.Thread(target=worker)
    t.start()
    with cond:
        cond.wait_for(lambda: event.is_set() or bool(box), timeout=5)
    event.wait()
    barrier.wait()
    for q in queues:
        q.get()
    t.join()
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        futures = [pool.submit(sum, [i, i]) for i in range(3)]
        concurrent.futures.wait(futures)
        assert sorted(f.result() for f in concurrent.futures.as_completed(futures)) == [0, 2, 4]


def file_operations():
    path = os.path.join(racecheck.fakefs.root(), "a.txt")

    def writer():
        with open(path, "w") as f:
            f.write("x")
        os.replace(path, path + ".bak")

    t = threading.Thread(target=writer)
    t.start()
    os.path.exists(path)
    os.listdir(racecheck.fakefs.root())
    racecheck.fakefs.current_store().listdir(racecheck.fakefs.root())  # the store's own API, called directly
    t.join()


@pytest.mark.parametrize("strategy", ["random", "pct"])
def test_hinted_locations_equal_the_full_walk_for_every_primitive(checked_locations, strategy):
    seen, mismatches = checked_locations
    # memory=False: NamedQueue subclasses the real queue.Queue and so is a real queue (docs/control.md); the
    # schedules memory watching adds include one where the main thread gets from it first and blocks for real.
    result = racecheck.explore(every_primitive, strategy=strategy, schedules=20, seed=3, locations="always",
                               memory=False)
    result.raise_on_failure()
    assert mismatches == []
    assert any("test_location_hints.py" in loc for loc in seen)
    assert not any("racecheck/" in loc or "harness/" in loc for loc in seen if loc)


@pytest.mark.parametrize("fs", ["posix", "windows"])
def test_hinted_locations_equal_the_full_walk_on_the_fake_filesystem(checked_locations, fs):
    seen, mismatches = checked_locations
    result = racecheck.explore(file_operations, strategy="random", schedules=10, seed=1, fs=fs, locations="always")
    result.raise_on_failure()
    assert mismatches == []
    assert any("test_location_hints.py" in loc for loc in seen)


def test_hinted_locations_equal_the_full_walk_on_classic_bugs(checked_locations):
    seen, mismatches = checked_locations
    for bug in (classic_bugs.lost_update, classic_bugs.lock_order_deadlock, classic_bugs.missed_wakeup,
                classic_bugs.submit_races_shutdown, classic_bugs.futures_order_violation):
        racecheck.explore(
            bug, strategy="pct", schedules=30, seed=0, instrument=[classic_bugs], shrink_budget=20, locations="always"
        )
    assert mismatches == []
    assert seen


def test_hinted_locations_equal_the_full_walk_on_stock_lightning(checked_locations, tmp_path):
    pytest.importorskip("lightning")
    torch = pytest.importorskip("torch")
    from lightning.pytorch.plugins.io.async_plugin import AsyncCheckpointIO
    from lightning.pytorch.plugins.io.torch_plugin import TorchCheckpointIO

    seen, mismatches = checked_locations

    def save_and_remove():
        io = AsyncCheckpointIO(TorchCheckpointIO())
        path = os.path.join(racecheck.fakefs.root(), "a.ckpt")
        io.save_checkpoint({"w": torch.zeros(2)}, path)
        io.remove_checkpoint(path)
        io.teardown()

    racecheck.explore(
        save_and_remove, strategy="random", schedules=10, seed=0, fs="posix",
        instrument=["lightning.pytorch.plugins.io.async_plugin"], locations="always",
    )
    assert mismatches == []
    assert any("async_plugin.py" in loc for loc in seen)
