"""One reusable OS thread that runs the test function of an exploration's successive schedules.

Every schedule's test function needs a thread of its own (the explorer's thread supervises it and must stay free
to report a thread stuck in uncontrolled code). Creating, starting and joining a fresh thread for it was over half
of the fixed cost of a schedule, and a large share of a short workload's. A carrier is started once per
exploration and handed batches of schedules in turn (``racecheck.runtime.batch``): it plays the part the main
thread plays in a plain loop that runs the same code over and over, test function and bookkeeping alike.

A carrier whose body never came back (the test function stuck in uncontrolled code, left behind by teardown) is
abandoned and a fresh one serves the next batch. ``close`` stops the current one when the exploration ends,
so no carrier outlives it.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable

from racecheck import runtime

__racecheck_engine__ = True

_real_Thread = threading.Thread
_real_thread_start = threading.Thread.start
_real_is_alive = threading.Thread.is_alive  # the OS thread's state, whatever Thread.is_alive is patched to


class Carrier:
    def __init__(self, name: str = "racecheck-T0") -> None:
        self._go = runtime.real_allocate_lock()
        self._go.acquire()  # held = nothing to run yet
        self._body: Callable[[], None] | None = None
        self._abandoned = False
        self.thread = _real_Thread(target=self._loop, name=name, daemon=True)
        _real_thread_start(self.thread)

    def _loop(self) -> None:
        while True:
            self._go.acquire()
            body, self._body = self._body, None
            if body is None:
                return
            try:
                body()  # a controlled body: catches everything, always returns unless stuck
            except BaseException:
                self._abandoned = True  # an engine bug: end like a plain thread would, and never serve again
                raise
            if self._abandoned:
                return  # came back after all, too late: its exploration moved on to a fresh carrier

    @property
    def usable(self) -> bool:
        return not self._abandoned and _real_is_alive(self.thread)

    def submit(self, body: Callable[[], None]) -> None:
        """Run ``body`` on the carrier (the previous body must have returned or be about to)."""
        self._body = body
        self._go.release()

    def abandon(self) -> None:
        """Its body is stuck in uncontrolled code: if it ever comes back, the thread ends instead of waiting
        (the flag for a body still running, the released lock for one that came back just now)."""
        self._abandoned = True
        self._wake_empty()

    def close(self, timeout: float = 2.0) -> None:
        """Let the thread end and wait for it (it has no body left to run)."""
        if self._wake_empty():
            self.thread.join(timeout)

    def _wake_empty(self) -> bool:
        """Wake the thread with nothing to run, so it ends; False when it was woken that way already."""
        self._body = None
        try:
            self._go.release()
        except RuntimeError:
            return False
        return True


def trace_like_a_new_thread() -> None:
    """Give the calling carrier the trace and profile functions ``threading.settrace``/``setprofile`` give every new
    thread (``Thread._bootstrap_inner`` installs them), before it runs the next body as a thread of a run (a
    schedule's root, a thread the root started). A carrier outlives its bodies, and CPython drops a thread's trace
    function when it raises, as the line tracer's ``Abort`` does in a stopped run: without this the next body ran
    without them (no line-level points on 3.10/3.11, so a spin loop was uncontrolled for good)."""
    trace, profile = threading.gettrace(), threading.getprofile()
    if trace is not None and sys.gettrace() is not trace:
        sys.settrace(trace)
    if profile is not None and sys.getprofile() is not profile:
        sys.setprofile(profile)
