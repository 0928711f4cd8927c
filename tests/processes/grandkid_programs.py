"""The grandchildren tests' programs: a process a child starts (a grandchild of the run) and the objects a child
makes for it. Module-level functions only, so spawn children can import them."""

import multiprocessing
import os

import racecheck.fakefs

PIDS = []  # real pids the running program's processes reported (the reaping test reads them)


def _save(path, reports):
    with open(path, "w") as f:
        f.write("weights")
    reports.put("saved")


def _middle(path, reports, method):
    """The child: starts the grandchild that writes the checkpoint, and waits for it."""
    saver = multiprocessing.get_context(method).Process(target=_save, args=(path, reports))
    saver.start()
    saver.join()
    assert saver.exitcode == 0, saver.exitcode


def grand_leak(method="fork", inner="fork"):
    """The root evicts epoch=0.ckpt (exists, then remove) before it waits for the report of the grandchild that
    writes it: the checkpoint written afterwards leaks."""
    ctx = multiprocessing.get_context(method)
    path = os.path.join(racecheck.fakefs.root(), "epoch=0.ckpt")
    reports = ctx.Queue()
    child = ctx.Process(target=_middle, args=(path, reports, inner))
    child.start()
    if os.path.exists(path):
        os.remove(path)
    assert reports.get() == "saved"
    child.join()
    assert child.exitcode == 0
    assert not os.path.exists(path), "leaked epoch=0.ckpt"


def grand_leak_spawn():
    grand_leak("fork", "spawn")


def _save_and_say(path, saved):
    with open(path, "w") as f:
        f.write("weights")
    saved.set()


def _middle_waits(path, reports):
    """The child: its own Event, set by the grandchild once the checkpoint is written, before it reports."""
    ctx = multiprocessing.get_context("fork")
    saved = ctx.Event()
    saver = ctx.Process(target=_save_and_say, args=(path, saved))
    saver.start()
    saved.wait()
    reports.put("saved")
    saver.join()


def grand_leak_fixed():
    """The root evicts only after the report, which the child sends once its grandchild's event says the
    checkpoint is written: clean."""
    ctx = multiprocessing.get_context("fork")
    path = os.path.join(racecheck.fakefs.root(), "epoch=0.ckpt")
    reports = ctx.Queue()
    child = ctx.Process(target=_middle_waits, args=(path, reports))
    child.start()
    assert reports.get() == "saved"
    os.remove(path)
    child.join()
    assert not os.path.exists(path), "leaked epoch=0.ckpt"


def _reader(end):
    end.recv()


def _middle_forgets(reports):
    """The child hands its grandchild a pipe, then joins it without sending: both wait for ever."""
    ctx = multiprocessing.get_context("fork")
    mine, theirs = ctx.Pipe()
    reader = ctx.Process(target=_reader, args=(theirs,))
    reader.start()
    reader.join()
    reports.put("never")


def grand_deadlock():
    """A deadlock across a child and its grandchild (and the root joining the child)."""
    ctx = multiprocessing.get_context("fork")
    reports = ctx.Queue()
    child = ctx.Process(target=_middle_forgets, args=(reports,))
    child.start()
    child.join()


def _echo(end):
    end.send(end.recv() + 1)
    end.close()


def _middle_echoes(reports):
    """The child talks to its grandchild over a pipe it made, then reads EOF once the grandchild left."""
    ctx = multiprocessing.get_context("fork")
    mine, theirs = ctx.Pipe()
    echo = ctx.Process(target=_echo, args=(theirs,))
    echo.start()
    theirs.close()  # the child's copy of the grandchild's end
    mine.send(41)
    answer = mine.recv()
    try:
        mine.recv()
        eof = False
    except EOFError:
        eof = True
    echo.join()
    reports.put((answer, eof, echo.exitcode, echo.is_alive(), type(mine).__module__))


def grand_pipe():
    ctx = multiprocessing.get_context("fork")
    reports = ctx.Queue()
    child = ctx.Process(target=_middle_echoes, args=(reports,))
    child.start()
    got = reports.get()
    child.join()
    assert got == (42, True, 0, False, "racecheck.control.processes.models"), got


def _stuck(reports, never):
    reports.put(multiprocessing.current_process().pid)  # the real pid: the process's own record of it
    never.wait()


def _middle_stuck(reports):
    ctx = multiprocessing.get_context("fork")
    never = ctx.Event()
    stuck = ctx.Process(target=_stuck, args=(reports, never))
    stuck.start()
    reports.put(multiprocessing.current_process().pid)
    stuck.join()


def root_fails_while_grandchild_waits():
    """The root fails while its child joins a grandchild that waits for ever: both reaped with the run."""
    ctx = multiprocessing.get_context("fork")
    reports = ctx.Queue()
    child = ctx.Process(target=_middle_stuck, args=(reports,))
    child.start()
    PIDS.extend([reports.get(), reports.get()])
    raise AssertionError("root fails")


def grand_leak_spawnroot():
    """The child is spawned (a fresh interpreter, its process calls patched there) and forks the grandchild."""
    grand_leak("spawn", "fork")


def _middle_terminates(reports):
    """The child terminates a grandchild that waits for ever, then joins it and reads how it ended."""
    ctx = multiprocessing.get_context("fork")
    never = ctx.Event()
    stuck = ctx.Process(target=never.wait)
    stuck.start()
    alive = stuck.is_alive()
    stuck.terminate()
    stuck.join()
    reports.put((alive, stuck.is_alive(), stuck.exitcode))


def grand_terminate():
    ctx = multiprocessing.get_context("fork")
    reports = ctx.Queue()
    child = ctx.Process(target=_middle_terminates, args=(reports,))
    child.start()
    got = reports.get()
    child.join()
    assert got == (True, False, -15), got


def _middle_leaves(reports):
    """The child starts a grandchild that waits for ever and returns without joining it (at its exit the real
    process joins its children)."""
    ctx = multiprocessing.get_context("fork")
    never = ctx.Event()
    ctx.Process(target=never.wait).start()
    reports.put("started")


def root_fails_after_child_ended():
    """The root fails once its child said it ended while its grandchild still waits: teardown reaps the grandchild
    before the child, which is joining it."""
    ctx = multiprocessing.get_context("fork")
    reports = ctx.Queue()
    child = ctx.Process(target=_middle_leaves, args=(reports,))
    child.start()
    reports.get()
    child.join(timeout=1.0)
    raise AssertionError("root fails")


def _write(path):
    with open(path, "w") as f:
        f.write("weights")


def _middle_returns(path):
    multiprocessing.get_context("fork").Process(target=_write, args=(path,)).start()  # never joined here


def grand_unjoined():
    """A child returns without joining its grandchild: as a real process, it ends only once the grandchild has
    (multiprocessing's exit handler joins it), so the root's join of the child sees the grandchild's file."""
    ctx = multiprocessing.get_context("fork")
    path = os.path.join(racecheck.fakefs.root(), "epoch=0.ckpt")
    child = ctx.Process(target=_middle_returns, args=(path,))
    child.start()
    child.join()
    assert os.path.exists(path), "the child ended before its grandchild"
