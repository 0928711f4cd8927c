"""The end of a run: unwinding the threads still parked in it, and what a run that could not be unwound leaves.

``teardown`` lets every parked controlled thread go, one at a time, to unwind (``Abort``) and waits for its OS
thread to end. A thread stuck in code racecheck does not control never comes back: it is reported as left behind,
whatever it registered with ``runtime.add_cleanup`` is undone here, and the failure says so. Such a run cannot be
run again to get source locations without leaving a second thread stuck, so its trace shows none
(``drop_locations``).

These are methods of ``Run`` (``Run.teardown``, ``Run.drop_locations``), kept here as functions of the run so the
scheduler's module holds the running of a run and this one its end.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from racecheck import runtime
from racecheck.errors import RacecheckError
from racecheck.runtime import cleanup
from racecheck.runtime.records import FailureInfo, release_quietly
from racecheck.runtime.sinks import touched_by
from racecheck.runtime.steps import Outcome, Pending, RunEnd

if TYPE_CHECKING:
    from racecheck.runtime.scheduler import Run

__racecheck_engine__ = True

_real_is_alive = threading.Thread.is_alive  # teardown asks of OS threads, not of the run's logical ones
_real_join = threading.Thread.join


def complete(run: Run) -> None:
    """The run completed (its root and every thread that is not a background one ended): the checks registered
    with ``runtime.at_completion`` are asked first, and the first finding is the run's failure (a child process
    still running: a leak), as an exception escaping that thread would be."""
    for check in run.resources.pop(runtime.AT_COMPLETION, ()):
        found = check()
        if found is not None and run.failure is None:
            run.failure = FailureInfo("exception", found[1], found[0])
    run.done.set()


def teardown(run: Run) -> None:
    """Unwind every parked thread, one at a time, and wait for each OS thread to end. A thread already reported
    as left behind (stuck in uncontrolled code) is not waited for again."""
    run.aborting = True
    gone = set(run.leaked)
    for rec in run.threads:
        if rec.exited.is_set() or not rec.launched or f"T{rec.tid}" in gone:
            continue
        release_quietly(rec.baton)
        if not rec.exited.wait(timeout=max(run.config.watchdog or 2.0, 2.0)):
            run.leaked.append(f"T{rec.tid}")
    for rec in run.threads:
        thread = rec.thread
        if rec.carried or thread is None or not rec.exited.is_set():
            continue
        if _real_is_alive(thread):
            _real_join(thread, 1.0)
    for action in run.resources.pop(runtime.TEARDOWN, ()):
        action()
    _clean_up_after_leaks(run)


def _clean_up_after_leaks(run: Run) -> None:
    """Threads that could not be unwound never run their own cleanup: undo what the run registered for that
    case, and say so in the failure. When every thread unwound, the registrations are dropped unused."""
    pending, run.cleanups = run.cleanups, []
    if not run.leaked or (run.leaks_reported and not pending):
        return  # all unwound, or a second teardown of the same run with nothing new
    run.leaks_reported = True
    done = cleanup.undo(pending)
    run.cleaned.extend(done)
    who = ", ".join(dict.fromkeys(run.leaked))
    what = cleanup.describe(done)
    report = f"[{who} could not be unwound (stuck in uncontrolled code); cleaned up after it: {what}]"
    exc = run.failure.exception if run.failure is not None else None
    if isinstance(exc, RacecheckError) and report not in str(exc):
        exc.args = (f"{exc.args[0] if exc.args else ''} {report}".strip(), *exc.args[1:])
    elif exc is not None and hasattr(exc, "add_note"):
        exc.add_note(report)
    elif exc is not None:  # 3.10 has no add_note: the note goes where 3.11 keeps notes
        exc.__notes__ = [*getattr(exc, "__notes__", []), report]


def drop_locations(run: Run) -> None:
    """Blank the source locations of the trace. Done to every run that left a thread stuck in uncontrolled
    code: explore runs schedules without locations and gets them by running a failing one again, which such a
    run cannot be (it would leave a second thread stuck), so its trace has none; a replay of its token, run
    with locations, drops them too, and prints the same trace."""
    run.trace = [event._replace(loc="") if event.loc else event for event in run.trace]


RECORD = "_racecheck_record"  # the attribute of a controlled thread's Thread object that holds its record


def detach(run: Run) -> None:
    """Once every thread of the run has exited: cut the links from its threads back to it (record, body,
    chooser), so the run, its records and its trace are freed by reference counting when the explorer drops
    it. Otherwise every schedule leaves a cycle of about a hundred objects behind, and the garbage collector, woken
    every few schedules, walks them all: a large share of the main thread's time on a short workload.
    What explore keeps (trace, choices, failure) stays; a thread stuck in uncontrolled code keeps its links."""
    if run.leaked:
        return
    for rec in run.threads:
        if rec.launched and not rec.exited.is_set():
            return
    for rec in run.threads:
        thread = rec.thread
        if thread is not None:
            if thread.__dict__.get("run") is rec.body:
                del thread.run
            if getattr(thread, RECORD, None) is rec:
                delattr(thread, RECORD)
        rec.body = None
        rec.run = None
        rec.thread = None
        rec.enabled = None
    run.chooser = None
    run.view = None  # the view refers back to the run
    run.memory_steps.run = None  # so does the memory component (its records stay for the data-race report)
    run.launch = None  # the session's carriers: a run kept in a result must not keep them
    run.watch = None  # it keeps every object the run named alive


def ending(run: Run) -> RunEnd:
    """What the run's chooser is told of its end (``Chooser.end``): the outcome, steps, picks, trace, and what each
    thread that did not reach its end (``exit``) was about to do: a deadlocked or parked thread's next operation,
    or for a thread that a failure elsewhere stopped, the operation it was stopped in."""
    failure = run.failure
    if failure is not None:
        outcome = Outcome(failure.kind)
    else:
        outcome = Outcome.CRASHED if run.crashed else Outcome.PASSED
    waiting = tuple(Pending(rec.tid, rec.op, rec.loc, rec.access, rec.points, "waiting", None)
                    for rec in run.threads if rec.launched and rec.op != "exit")
    # the run has ended: nothing changes its picks and trace, so they are handed as they are
    return RunEnd(outcome, run.steps, run.picked, run.trace, waiting, run.taken.finish(run.trace), run.memory_steps,
                  None if failure is None else failure.tid, touched_by(run.sinks))


def close_sinks(run: Run) -> None:
    """The run has ended: each of its sinks gets the steps it has not had, then ``end``. Once per run, before its
    chooser is told (``ending``): what a sink found there may still change the run's outcome (a data race that
    fails it)."""
    if run.sinks:
        run_end = ending(run)
        for sink in run.sinks:
            sink.end(run_end)
