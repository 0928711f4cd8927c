"""The watchdog: telling when a run has stopped making progress (a controlled thread stuck in code racecheck does
not control), and saying where that thread is stuck.

One bound for every uncontrolled wait (``hang_bound``): a controlled thread that has made no scheduling point for
``HANG_WATCHDOGS`` watchdogs (10 s by default) while it waits, on a socket or pipe, on another process, on a real
lock or in C code, is hung, whatever it waits on. A thread that moves (a computation without points, in code
that is not watched, or a long first import) is not waiting: its time starts again where it goes. The verdict is
a hang, never a race (``Failure.hang``), and its message names the bound, not the time measured, so a replay
reads the same.

The supervisor (the explorer's own, uncontrolled thread) asks a ``Watch`` every ``poll_interval`` while a phase of
a run goes on; once it says the phase is stuck, ``Run.fail_stuck`` records the failure with ``describe_stuck``'s
words, and the run is torn down without the stuck thread.
"""

from __future__ import annotations

import gc
import sys
import time
import types
from typing import TYPE_CHECKING, Any

from racecheck import runtime
from racecheck.runtime.locations import stuck_location

if TYPE_CHECKING:
    from racecheck.runtime.records import ThreadRecord
    from racecheck.runtime.scheduler import Run

__racecheck_engine__ = True

_real_monotonic = time.monotonic  # the supervisor's own clock: real time, whatever instrumentation swaps


class Watch:
    """Tells when a phase of a run has stopped making progress: a thread stuck in uncontrolled code.

    Asked every poll interval by the supervisor (the explorer's thread) while the phase runs. Progress is read from
    the scheduler's own records (the step counter), never by polling other threads' frames: ``sys._current_frames()``
    can deadlock CPython 3.11 when it runs the GC under the runtime head lock while a thread is inside
    ``Thread.start()`` (gh-106883). Only once no step has happened for half the watchdog is the running thread's
    frame read (with the GC off), to tell a long computation that still moves from a thread blocked in one place;
    a thread still at the same place a half-watchdog later is stuck.
    """

    def __init__(self, run: Run) -> None:
        self.run = run
        self.done = run.done  # the phase watched: crash recovery starts a new one with a new latch
        self.watchdog = run.config.watchdog or 2.0
        self.last_steps = run.steps
        self.last_progress = _real_monotonic()
        self.seen: set = set()  # code locations of the running thread observed since the last step

    def stuck(self) -> bool:
        run = self.run
        now = _real_monotonic()
        if run.steps != self.last_steps:
            self.last_steps, self.last_progress = run.steps, now
            self.seen.clear()
            return False
        elapsed = now - self.last_progress
        bound = hang_bound(self.watchdog)
        # A known wait on another process (racecheck.control.external) is judged like any other: it is a wait while
        # the thread stays in one place; an import counted as outside moves, and is given time as a computation is.
        # A proxy waiting on its child (``runtime.OUTSIDE_PROGRESS``: the child's CPU time) moves while the child
        # computes: a spawned child importing torch takes longer than the bound, a child blocked for real does not.
        if elapsed < self.watchdog / 2:
            return False
        where = _current_frame_key(run.current)
        progress = run.resources.get(runtime.OUTSIDE_PROGRESS)  # the other process the thread waits on, if it computes
        if where is not None and progress is not None:
            where = (where, progress())
        if where is not None and where not in self.seen:
            self.seen.add(where)  # it moved: a computation without scheduling points, its time starts again
            self.last_progress = now
            return False
        if self.done.is_set() or run.steps != self.last_steps:
            return False
        return elapsed >= bound  # in one place (or places it keeps coming back to) for the bound: a hang


def poll_interval(watchdog: float | None) -> float | None:
    """How often the supervisor looks at a run: an eighth of the watchdog, between 10 and 250 ms (None: never)."""
    return None if watchdog is None else min(max(watchdog / 8, 0.01), 0.25)


HANG_WATCHDOGS = 5  # an uncontrolled wait is a hang after this many watchdogs (10 s at the default 2 s)


def hang_bound(watchdog: float | None) -> float:
    """How long any uncontrolled wait (a socket, a pipe, another process, a real lock, a wait in C code) may last
    before it is called a hang: ``HANG_WATCHDOGS`` watchdogs, so ``watchdog=0.5`` says so after 2.5 s."""
    return (watchdog or 2.0) * HANG_WATCHDOGS


def describe_stuck(rec: ThreadRecord | None, watchdog: float | None, outside: int) -> str:
    """The hang's message for ``rec``, the running thread of a run the watch found stuck: the bound it waited past,
    what it waited in (a wait on another process, ``outside``: its operation), and where it is stuck if its frame
    can be read, else since which operation. The same words in every replay: the bound, never the time measured."""
    bound = hang_bound(watchdog)
    if rec is None:
        return f"hang: the run made no progress for {bound:g}s"
    last = f"'{rec.op}'"  # no location: a run that leaves a thread stuck shows none (see Run.drop_locations)
    head = f"hang: T{rec.tid} made no scheduling point for {bound:g}s"
    if outside:
        head += (f", waiting in {last} on another process or the network (which may need a controlled thread, "
                 f"and none runs while T{rec.tid} waits)")
    advice = (
        f"(an uncontrolled wait, not a race: a socket, pipe or process that does not answer, an object made "
        f"before the exploration (a real lock) or in a module left out with exclude=, a real sleep or a wait in C "
        f"code; every such wait is a hang after {HANG_WATCHDOGS} watchdogs)"
    )
    try:
        where = stuck_location(_frame_of(rec))
    except Exception:  # noqa: BLE001 - any surprise while reading frames: fall back to the scheduler's records
        where = ""
    if not where:
        return f"{head} since {last} {advice}" if not outside else f"{head} {advice}"
    return f"{head}, stuck in {where} {advice}"


def _frame_of(rec: ThreadRecord | None) -> Any:
    """The current frame of ``rec``'s OS thread, or None; never raises. The GC is off during the read, which
    is what makes ``sys._current_frames()`` safe from gh-106883."""
    try:
        ident = None if rec is None or rec.thread is None else rec.thread.ident
        if ident is None:
            return None
        collecting = gc.isenabled()
        gc.disable()
        try:
            frame = sys._current_frames().get(ident)
        finally:
            if collecting:
                gc.enable()
        return frame if isinstance(frame, types.FrameType) else None
    except Exception:  # noqa: BLE001 - describing a stuck thread must never crash the run
        return None


def _current_frame_key(rec: ThreadRecord | None) -> tuple | None:
    """Where ``rec``'s OS thread is now (file, line), or None: the watch's measure of movement."""
    frame = _frame_of(rec)
    if frame is None:
        return None
    try:
        return (frame.f_code.co_filename, frame.f_lineno)
    except Exception:  # noqa: BLE001
        return None


def describe_waiters(unfinished: list[ThreadRecord]) -> str:
    """A deadlock in words: what each thread that cannot run waits in, and where."""
    waits = "; ".join(f"T{r.tid} waits: {r.op} @{r.loc}" for r in unfinished)
    return f"deadlock: no thread can run ({waits})"
