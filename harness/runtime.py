"""The engine's extension contract: how code under control finds the run it belongs to.

Everything that wants to be a scheduling point (sync primitives, the fake filesystem, ``racecheck.point``)
goes through the ``Run`` object returned by :func:`current_run`. Outside a controlled run it returns None and
callers must behave exactly like the real thing, so instrumented code stays usable by uncontrolled threads.

The Run protocol (implemented in ``racecheck.scheduler``)::

    run.schedule(op, *, enabled=None, timeout=None) -> bool
        A scheduling point. ``op`` is a short, deterministic text for the trace ("fs.open /a.ckpt wb").
        ``enabled`` is a zero-argument predicate: the thread stays blocked until it holds (evaluated only by the
        scheduler, with every other controlled thread parked, so it may read shared state freely).
        ``timeout`` (virtual seconds) bounds the wait; returns False iff it timed out, True otherwise.
    run.choose(n, label) -> int
        A value in range(n) from the run's single choice stream (0 is the simplest: "no fault", "first").
        Recorded in the schedule token, replayed exactly.
    run.now() -> float            virtual clock (seconds); advances only when every thread waits on time
    run.sleep(seconds)            scheduling point that lets virtual time pass for this thread
    run.crash(reason) -> NoReturn stop the whole run here (power loss); see ``racecheck.Crashed``
    run.on_finish(callback)       callback(run) after every controlled thread is gone, pass or fail
    run.resources                 dict for per-run state of extensions (e.g. the fake filesystem's store)
    run.new_object_id(kind) -> str  logical name for a traced object ("Lock#3"), stable across replays
"""

from __future__ import annotations

import _thread
import threading
from typing import Any

__racecheck_engine__ = True

_local = threading.local()

# The real primitives, captured before any instrumentation can swap names, for the engine's own use.
real_allocate_lock = _thread.allocate_lock
real_get_ident = _thread.get_ident


def current_run() -> Any | None:
    """The controlled run the calling thread belongs to, or None for an uncontrolled thread."""
    return getattr(_local, "run", None)


def current_thread_record() -> Any | None:
    """The scheduler's record of the calling controlled thread, or None."""
    return getattr(_local, "thread", None)


def bind(run: Any | None, thread: Any | None) -> None:
    """Attach the calling OS thread to a run (engine use only)."""
    _local.run = run
    _local.thread = thread


def point(name: str) -> None:
    """An explicit scheduling point, e.g. a delay hook in code under test; a no-op outside a controlled run."""
    run = current_run()
    if run is not None:
        run.schedule(f"point {name}")
