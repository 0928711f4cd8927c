"""Programs of the warm-grandchildren tests (``racecheck.control.processes.grand_warm``). Module-level functions
only, so spawn children and grandchildren can import them."""

import multiprocessing
import os

COUNT = 0  # a module global that a grandchild changes: a reused process would carry it into the next schedule


def _bump_and_report(reports):
    global COUNT
    COUNT += 1
    reports.put((COUNT, os.getppid(), os.environ.get("RACECHECK_WARMGK_PROBE")))


def _middle(reports, inner):
    """The child: its own environment, then two grandchildren that report what they found at their start."""
    os.environ["RACECHECK_WARMGK_PROBE"] = f"child {os.getpid()}"  # the child's, which a grandchild inherits
    ctx = multiprocessing.get_context(inner)
    kids = [ctx.Process(target=_bump_and_report, args=(reports,)) for _ in range(2)]
    for kid in kids:
        kid.start()
    for kid in kids:
        kid.join()
    reports.put(("middle", os.getpid(), None))


def grand_module_state(seen, outer="fork", inner="spawn"):
    """The root's child starts two grandchildren (``inner``): each reports the module global it bumped (1 when it
    starts from a fresh interpreter's state), its real parent and the environment variable the child set."""
    ctx = multiprocessing.get_context(outer)
    reports = ctx.Queue()
    child = ctx.Process(target=_middle, args=(reports, inner))
    child.start()
    got = [reports.get() for _ in range(3)]
    child.join()
    middle = next(pid for count, pid, _ in got if count == "middle")
    kids = [report for report in got if report[0] != "middle"]
    seen.append((middle, kids))
    assert [count for count, _, _ in kids] == [1, 1], f"a grandchild saw state left by another: {got}"
    assert all(probe == f"child {middle}" for _, _, probe in kids), f"not the child's environment: {got}"


def _interrupt(pid):
    import signal

    os.kill(pid, signal.SIGINT)  # Ctrl-C for the explorer, while this grandchild still runs
    multiprocessing.Event().wait()


def _middle_interrupted(pid):
    kid = multiprocessing.get_context("spawn").Process(target=_interrupt, args=(pid,))
    kid.start()
    kid.join()


def grand_interrupted(pid):
    """The explorer is interrupted while a spawned grandchild still runs and its parent and the root wait."""
    child = multiprocessing.get_context("fork").Process(target=_middle_interrupted, args=(pid,))
    child.start()
    child.join()
