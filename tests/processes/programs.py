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
