"""Programs of the warm-children tests. Module-level functions only, so spawn children can import them."""

import multiprocessing
import os
import signal
import sys

COUNT = 0  # a module global that a child changes: a reused process would carry the change into the next schedule


def _bump_and_report(reports):
    global COUNT
    COUNT += 1
    reports.put((COUNT, os.getppid()))


def module_state(method="spawn", seen=None):
    """A spawned child increments a module global and reports it with its parent's pid: 1 in every schedule
    when every child starts from the state a fresh interpreter has."""
    ctx = multiprocessing.get_context(method)
    reports = ctx.Queue()
    children = [ctx.Process(target=_bump_and_report, args=(reports,)) for _ in range(2)]
    for child in children:
        child.start()
    got = [reports.get(), reports.get()]
    for child in children:
        child.join()
    if seen is not None:
        seen.extend(parent for _, parent in got)
    assert [count for count, _ in got] == [1, 1], f"a child saw state left by another: {got}"


def _interrupt(pid):
    os.kill(pid, signal.SIGINT)  # Ctrl-C for the explorer, while this child still runs
    multiprocessing.Event().wait()


def interrupted(pid, method="spawn"):
    """The explorer is interrupted (Ctrl-C) while a child of the run still runs and the parent waits for it."""
    child = multiprocessing.get_context(method).Process(target=_interrupt, args=(pid,))
    child.start()
    child.join()


def _report_environment(reports):
    reports.put(os.environ.get("RACECHECK_WARM_PROBE"))


def environment(runs, seen):
    """Each schedule sets a variable of the environment to its own value before it starts a child (a rank's
    MASTER_PORT, say): the child sees the value of its schedule."""
    runs.append(None)
    os.environ["RACECHECK_WARM_PROBE"] = str(len(runs))
    ctx = multiprocessing.get_context("spawn")
    reports = ctx.Queue()
    child = ctx.Process(target=_report_environment, args=(reports,))
    child.start()
    seen.append((str(len(runs)), reports.get()))
    child.join()


def _report_preloaded(reports):
    reports.put("warm_preloaded" in sys.modules)


def preloaded(seen):
    """A forkserver child reports whether a module its target does not name was imported before it ran."""
    ctx = multiprocessing.get_context("forkserver")
    reports = ctx.Queue()
    child = ctx.Process(target=_report_preloaded, args=(reports,))
    child.start()
    seen.append(reports.get())
    child.join()
