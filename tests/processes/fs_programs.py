"""The processes tests' programs on the fake filesystem: the issue's checkpoint leak with the checkpoint on the
run's one store, which parent and child share. Module-level functions only, so spawn children can import them."""

import multiprocessing
import os

import fsspec
import racecheck.fakefs


def save_and_report(path, reports):
    with open(path, "w") as f:
        f.write("weights")
    reports.put("saved")


def leak(method, evict_first=True, check_leak=True):
    """A child writes epoch=0.ckpt on the fake filesystem and reports on a queue; the parent evicts it (exists,
    then remove) before waiting for the report: the checkpoint written afterwards leaks (posix), or the remove
    meets the child's open file (windows: WinError 32)."""
    ctx = multiprocessing.get_context(method)
    path = os.path.join(racecheck.fakefs.root(), "epoch=0.ckpt")
    reports = ctx.Queue()
    child = ctx.Process(target=save_and_report, args=(path, reports))
    child.start()
    if evict_first:
        if os.path.exists(path):
            os.remove(path)
    assert reports.get() == "saved"
    if not evict_first:
        os.remove(path)
    child.join()
    assert child.exitcode == 0
    if check_leak:
        assert not os.path.exists(path), "leaked epoch=0.ckpt"


def leak_fork():
    leak("fork")


def leak_spawn():
    leak("spawn")


def leak_fixed_fork():
    leak("fork", evict_first=False)


def evict_fork():
    """Only the eviction: under windows semantics it fails when it meets the child's open checkpoint."""
    leak("fork", check_leak=False)


def evict_spawn():
    leak("spawn", check_leak=False)


def write_listing(root, reports):
    os.makedirs(os.path.join(root, "ckpt"), exist_ok=True)
    with open(os.path.join(root, "ckpt", "a.bin"), "wb") as f:
        f.write(b"abc")
        f.flush()
        os.fsync(f.fileno())
    os.rename(os.path.join(root, "ckpt", "a.bin"), os.path.join(root, "ckpt", "b.bin"))
    with open(os.path.join(root, "ckpt", "b.bin"), "rb") as f:
        data = f.read()
    fd = os.open(os.path.join(root, "ckpt", "c.bin"), os.O_CREAT | os.O_WRONLY)
    os.write(fd, b"xy")
    os.close(fd)
    with fsspec.open("racefs://ckpt/d.bin", "wb") as f:  # fsspec's racefs:// in the child: the same store
        f.write(b"fsspec")
    listed = sorted(info["name"] for info in fsspec.filesystem("racefs").ls("racefs://ckpt", detail=True))
    size = os.path.getsize(os.path.join(root, "ckpt", "c.bin"))
    reports.put((sorted(os.listdir(os.path.join(root, "ckpt"))), data, size, listed))


def operations(method):
    """A child's file operations on the fake filesystem, seen by the parent."""
    ctx = multiprocessing.get_context(method)
    root = racecheck.fakefs.root()
    reports = ctx.Queue()
    child = ctx.Process(target=write_listing, args=(root, reports))
    child.start()
    got = reports.get()
    child.join()
    names = ["b.bin", "c.bin", "d.bin"]
    assert got == (names, b"abc", 2, [f"{root}/ckpt/{name}" for name in names]), got
    with open(os.path.join(root, "ckpt", "b.bin"), "rb") as f:
        assert f.read() == b"abc"
    with open(os.path.join(root, "ckpt", "d.bin"), "rb") as f:
        assert f.read() == b"fsspec"
    assert sorted(os.listdir(os.path.join(root, "ckpt"))) == names


def operations_fork():
    operations("fork")


def operations_spawn():
    operations("spawn")


NEW = b"NEW CHECKPOINT " * 4


def careless_save(final):
    tmp = final + ".tmp"
    with open(tmp, "wb") as f:
        f.write(NEW)
    os.replace(tmp, final)  # no fsync: a power loss may keep the rename and lose the data


def save_in_child(method="fork"):
    """A saver process writes the checkpoint while the trainer waits for it; a power loss may come at any of
    the saver's file operations and takes both processes down."""
    ctx = multiprocessing.get_context(method)
    final = os.path.join(racecheck.fakefs.root(), "last.ckpt")
    saver = ctx.Process(target=careless_save, args=(final,))
    saver.start()
    saver.join()


def save_in_child_fork():
    save_in_child("fork")


def recovery():
    data = racecheck.fakefs.current_store().read_bytes(os.path.join(racecheck.fakefs.root(), "last.ckpt"))
    assert data in (None, NEW), f"partial checkpoint after power loss: {data!r}"


def sleepy_locker(reports):
    import threading
    import time

    lock = threading.Lock()
    with lock:
        time.sleep(3600)  # virtual time: the run does not wait an hour
    reports.put(os.getpid())


def spawned_stand_ins():
    """A spawned child's own lock and sleep are points of the run, as a forked child's are."""
    ctx = multiprocessing.get_context("spawn")
    reports = ctx.Queue()
    child = ctx.Process(target=sleepy_locker, args=(reports,))
    child.start()
    pid = reports.get()
    child.join()
    raise RuntimeError(f"child pid {pid}")  # a failure, so the test reads the trace


def leak_forkserver():
    leak("forkserver")


def two_savers(method="fork"):
    """Two saver processes, each writing its own checkpoint: a power loss at either's operation ends both."""
    ctx = multiprocessing.get_context(method)
    root = racecheck.fakefs.root()
    savers = [ctx.Process(target=careless_save, args=(os.path.join(root, f"{i}.ckpt"),)) for i in range(2)]
    for saver in savers:
        saver.start()
    for saver in savers:
        saver.join()


def two_savers_fork():
    two_savers("fork")


def two_savers_spawn():
    two_savers("spawn")
