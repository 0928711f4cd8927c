"""The instant check at every step: a sentinel thread whose wait ends only when the tracker names a checkpoint that
is not complete (or when the scenario tells it to stop), so the scheduler asks the invariant at every step of
every thread and process of the run, and the first instant that breaks it is recorded.

Why a wait rather than checks at points a strategy places: the scheduler evaluates a waiting thread's predicate at
every step, with every other thread parked (``RunContract.schedule``'s ``enabled``), which is exactly "at every
instant"; a checker at a few placed points sees the window only when the strategy puts a point inside it (pct
rarely does on two ranks, whose saves make thousands of steps), and every such point conflicts with every step, so
dpor branches on it. The sentinel is enabled only at a broken instant or at the end, so for a correct manager it
adds one step per schedule and no choice. The predicate reads the fake store directly and runs the manager's
``tracked`` (the tracker's text to a name) as no thread of the run, so it makes no point and records no access.
"""

from __future__ import annotations

import threading
from typing import Any

from racecheck import fakefs, runtime
from racecheck.runtime.access import ANYTHING
from racecheck.scenarios.manager_contract import tracked_checkpoint

# The predicate runs inside the scheduler's step, on whichever thread is choosing: this module is never rewritten
# for memory watching (its reads would be points inside a point), and what it calls runs as no thread of the run.
__racecheck_engine__ = True


class Sentinel:
    """Start it before the manager's first call, ``stop()`` it after the last; ``found`` is the first broken
    instant's message (None: the invariant held at every step)."""

    def __init__(self, manager_class: type, directory: str, world_size: int = 1) -> None:
        self.manager_class, self.directory, self.world_size = manager_class, directory, world_size
        self.found: str | None = None
        self.stopped = False
        self.store: Any = None
        self.thread = threading.Thread(target=self.watch, name="tracker-sentinel")

    def start(self) -> None:
        self.store = fakefs.current_store()
        self.thread.start()

    def stop(self) -> None:
        """Let the sentinel end (the scenario's calls are over), and wait for it."""
        self.stopped = True
        self.thread.join()

    def broken(self) -> bool:
        """The sentinel's predicate: True once an instant broke the invariant (recorded), or once stopped."""
        if self.found is None:
            run, rec = runtime.current_run(), runtime.current_thread_record()
            runtime.bind(None, None)  # the manager's ``tracked`` runs as no thread of the run: no point, no access
            try:
                broke = tracked_checkpoint(self.manager_class, self.directory, self.world_size, self.store)
            finally:
                runtime.bind(run, rec)
            if broke is not None:
                text, why = broke
                self.found = (f"at an instant: the tracker ({self.manager_class.tracker_file} = {text!r}) names a "
                              f"checkpoint that is not complete: {why}")
        return self.found is not None or self.stopped

    def watch(self) -> None:
        run = runtime.current_run()
        if run is None:
            return
        run.schedule("wait until the tracker names an incomplete checkpoint", access=ANYTHING, enabled=self.broken)
        self.check()  # a broken instant fails the schedule here and now

    def check(self) -> None:
        if self.found is not None:
            raise AssertionError(self.found)
