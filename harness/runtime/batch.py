"""Schedules run back to back on the carrier thread, supervised from the explorer's thread.

Handing each schedule from the explorer's thread to the carrier and back cost two thread wakeups per schedule, and
every piece of the between-schedule bookkeeping ran on one thread while the schedule's data was warm on the other:
letting the carrier run the schedules itself shortens the gap between two schedules. So the carrier runs a
*batch*: it asks for the next schedule's chooser, plays the test function itself as the root thread, finishes the
run (extension hooks, crash recovery, teardown) and hands it to ``after``, which accounts for it and says whether
to go on.

The explorer's thread only supervises. It wakes every poll interval (``watchdog.poll_interval``) to ask the
current run's ``Watch`` whether it still moves, and takes a stuck run over exactly as it did when it ran every
schedule itself: it fails the run, unwinds the threads it can, and abandons a carrier stuck in uncontrolled code.
Who finishes a phase of a run is settled by a claim on that phase's ``done`` latch: the carrier claims it once
the phase is over, the supervisor while it is not (stuck) or once it has been over for a watchdog without the
carrier coming back (its root stuck on the way out), and whoever loses leaves the run alone.

Anything that needs more runs (shrinking a failure, checking determinism) ends the batch: only the explorer's
thread starts batches. A batch also ends after ``BATCH_LIMIT`` schedules, so the explorer places the carrier
on a CPU again (``affinity.OneCpu``: two explorations that happened to share a CPU part again).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from racecheck import runtime
from racecheck.runtime.carrier import Carrier
from racecheck.runtime.chooser import Chooser
from racecheck.runtime.latch import Latch
from racecheck.runtime.scheduler import Run
from racecheck.runtime.watchdog import Watch, poll_interval

__racecheck_engine__ = True

BATCH_LIMIT = 32
monotonic = time.monotonic  # real time: the supervisor is never a controlled thread


class Batch:
    """One batch of schedules on ``carrier``; ``drive`` runs on the carrier, ``supervise`` on the explorer's thread.

    The session supplies the steps: ``next_chooser()`` gives the next schedule's chooser (None: no more),
    ``prepare(chooser)`` makes its run (begin hooks), ``play(run, claim)`` runs its phases and tears them down
    (False when ``claim`` says the supervisor took one over), ``finish(run, chooser, taken_over)`` ends it (end
    hooks if taken over, detach), ``after(run)`` accounts for it and says whether the batch goes on. All run on the
    carrier, except ``finish`` for a run the supervisor took over, which it finishes itself (``after`` never sees
    that run: the caller gets it back as the batch's last)."""

    def __init__(
        self,
        carrier: Carrier,
        play: Callable[[Run, Callable[[Any], bool]], bool],
        next_chooser: Callable[[], Chooser | None],
        prepare: Callable[[Chooser], Run],
        finish: Callable[[Run, Chooser, bool], None],
        after: Callable[[Run], bool],
        watchdog: float | None,
        limit: int = BATCH_LIMIT,
    ) -> None:
        self.carrier = carrier
        self._play = play
        self._next_chooser = next_chooser
        self._prepare = prepare
        self._finish = finish
        self._after = after
        self.watchdog = watchdog
        self.limit = limit
        self.current: Run | None = None  # the run being played, read by the supervisor
        self.chooser: Chooser | None = None
        self.last: Run | None = None  # the run the batch ended with (None: no schedule was left to run)
        self.error: BaseException | None = None  # raised by drive's own code (a hook, a callback): re-raised
        self.abandoned = False  # the carrier is stuck in uncontrolled code and must not serve again
        self.finished = Latch()
        self._stop = False
        self._claims = runtime.real_allocate_lock()
        self._claimed: Any = None  # the done latch of the last phase whose ending a side took on

    # ----- on the carrier ---------------------------------------------------------------------------------------

    def drive(self) -> None:
        try:
            for _ in range(self.limit):
                if self._stop:
                    return
                chooser = self._next_chooser()
                if chooser is None:
                    return
                run = self._prepare(chooser)
                self.chooser = chooser
                self.current = run
                if self._stop:
                    return  # interrupted while it was being prepared: nothing of it ran
                if not self._play(run, self.claim):
                    return  # the supervisor took it over
                self._finish(run, chooser, False)
                self.last = run
                if not self._after(run):
                    return
        except BaseException as exc:  # noqa: BLE001 - handed to the explorer's thread, raised there
            self.error = exc
        finally:
            self.finished.set()

    def claim(self, latch: Any) -> bool:
        """Take on ending the phase whose ``done`` latch is ``latch``; False if the other side has."""
        with self._claims:
            if self._claimed is latch:
                return False
            self._claimed = latch
            return True

    # ----- on the explorer's thread -----------------------------------------------------------------------------

    def supervise(self) -> Run | None:
        """Wait for the batch to end, taking over a run that stops making progress; the run it ended with."""
        poll = poll_interval(self.watchdog or 2.0)
        limit = max(self.watchdog or 2.0, 2.0)
        watch: Watch | None = None
        ended_at: float | None = None
        while not self.finished.wait(poll):
            run = self.current
            if run is None:
                continue
            if watch is None or watch.run is not run or watch.done is not run.done:
                watch, ended_at = Watch(run), None
                continue
            if run.done.is_set():
                # Over, but not yet claimed by the carrier: its root is still unwinding. Normally a moment;
                # a thread stuck in uncontrolled code on its way out (a finally block) would keep it forever.
                ended_at = ended_at if ended_at is not None else monotonic()
                if monotonic() - ended_at > limit and self._take_over(run, stuck=False):
                    break
            elif self.watchdog is not None and watch.stuck() and self._take_over(run, stuck=True):
                break
        if self.error is not None:
            error, self.error = self.error, None
            raise error
        return self.last

    def _take_over(self, run: Run, stuck: bool) -> bool:
        """A stuck phase (or one whose threads never came back from it): fail it if stuck, unwind what can be
        unwound, finish the run here. False when the carrier claimed the phase in the meantime."""
        latch = run.done
        with self._claims:
            if self._claimed is latch or (stuck and latch.is_set()):
                return False
            self._claimed = latch
        if stuck:
            run.fail_stuck()
        run.teardown()
        self._release_carrier(run)
        self._finish(run, self.chooser, True)  # type: ignore[arg-type]
        self.last = run
        return True

    def interrupt(self) -> None:
        """The explorer's thread was interrupted (KeyboardInterrupt) or is leaving on an error: stop after the current
        run, unwinding it now unless the carrier is already finishing it."""
        self._stop = True
        run = self.current
        if run is not None and self.claim(run.done):
            run.aborting = True
            run.done.set()
            run.teardown()
            self._release_carrier(run)
            self._finish(run, self.chooser, True)  # type: ignore[arg-type]
        elif not self.finished.wait(max(self.watchdog or 2.0, 2.0)):
            self._abandon()

    def _release_carrier(self, run: Run) -> None:
        """After the supervisor unwound ``run``: the carrier comes back from it, or is stuck in it for good."""
        root = run.root
        if root is not None and not root.exited.is_set():
            self._abandon()  # still stuck in the test function: a fresh one serves the next batch
        elif not self.finished.wait(max(self.watchdog or 2.0, 2.0)):
            self._abandon()

    def _abandon(self) -> None:
        self.abandoned = True
        self.carrier.abandon()
