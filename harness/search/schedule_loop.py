"""explore's main loop: schedule after schedule of the strategy, until the budget, the space or a stop."""

from __future__ import annotations

from typing import TYPE_CHECKING

from racecheck.errors import ReplayDivergence
from racecheck.runtime.chooser import Chooser
from racecheck.runtime.scheduler import FailureInfo, Run
from racecheck.search.data_race_sink import found_races
from racecheck.search.data_races import RaceLog
from racecheck.search.findings import collect
from racecheck.search.result import Result, failure_of
from racecheck.search.salvage import attempt
from racecheck.search.session import STALE_RETRIES

if TYPE_CHECKING:
    from racecheck.search.coverage import Coverage
    from racecheck.search.session import Session
    from racecheck.search.strategy import Strategy

__racecheck_engine__ = True


class Schedules:
    """explore's main loop: schedule after schedule of the strategy, until the budget, the space or a stop.

    Runs in batches on the carrier (``Session.run_batch``): ``next_chooser`` and ``after`` run there, and a run
    that passed is accounted for there too, without waking this thread. A failing run, or every run under
    ``check_determinism``, needs more runs (shrinking, a second execution), which only this thread may start: it
    ends the batch and is handled by ``_settle`` here, as is a run the supervisor took over."""

    def __init__(self, session: Session, strat: Strategy, coverage: Coverage, result: Result,
                 races: RaceLog | None = None) -> None:
        self.session = session
        self.config = session.search  # the search part of the exploration's options
        self.strat = strat
        self.coverage = coverage
        self.result = result
        self.index = 0
        self.chooser: Chooser | None = None
        self.counted: Run | None = None  # the last run ``after`` accounted for
        self.stale = 0  # runs of the current schedule that were thrown away (``Run.stale``)
        self.races = races if races is not None else RaceLog(self.config)  # every schedule's data races
        self.races.explored = lambda: session.steps_run

    def run(self, locate: bool) -> None:
        """Explore until the budget, the space or a stop: batches on the carrier, and here each run that ended one
        (``locate``: every schedule's trace gets source locations)."""
        while not self._finished():  # known here, a batch that would find nothing to run is not started
            run = self.session.run_batch(self.next_chooser, self.after, locate)
            if run is None:
                return
            if run is not self.counted and self._settle(run):
                return

    def _finished(self) -> bool:
        """The budget is spent or the space is run to its end (a batch ends at its size limit or at a failing
        run, so the last one's end did not say which; starting another only to hear it would cost one more
        hand-over to the carrier and back)."""
        return self.index >= self.config.schedules or self.coverage.exhausted or self.strat.finished

    def next_chooser(self) -> Chooser | None:
        """On the carrier: the next schedule's chooser (steered away from schedules already run), or None."""
        if self._finished():
            return None
        sampled = self.session.plan(self.index) == "sampled"
        chooser = self.strat.new_execution(self.index, sampled)
        if chooser is None:
            return None
        self.chooser = chooser
        return self.coverage.chooser(chooser, sampled)

    def _again(self, run: Run) -> bool:
        """Whether ``run`` brought code under memory watch while it ran: then it does not count, and the same
        schedule (the strategy's chooser for the same index, which it hands out again until told of an end) runs
        once more, now watched throughout."""
        if not run.stale or self.stale >= STALE_RETRIES:
            self.stale = 0
            return False
        self.stale += 1
        return True

    def after(self, run: Run) -> bool:
        """On the carrier: account for a run that needs nothing more; False hands it to ``_settle``."""
        if self._again(run):
            return True
        if run.failure is not None or self.config.check_determinism or \
                self.races.wants_locations(run, found_races(run)):
            return False
        self._races(run, self.index)
        self.strat.end_execution(self.chooser, run.steps)
        self.result.leaked_threads.extend(run.leaked)
        self._count(run, self.index)
        self.result.passed += 1
        self.index += 1
        self.counted = run
        return True

    def _count(self, run: Run, index: int) -> None:
        """``run`` counted as schedule ``index``; once the sampled runs' own space is run to its end, the rest
        watch everything (only they can make the space exhausted)."""
        self.coverage.count(run, index, self.result, self.strat.exhausted)
        if self.coverage.sampled_complete and self.session.sampling is not None:
            self.session.sampling.stop()

    def _races(self, run: Run, index: int, located: bool | None = None) -> None:
        """The data races of ``run`` (schedule ``index``) into the exploration's log."""
        cfg = self.config
        self.races.add(run, found_races(run), index, lambda: self.session.token(run, cfg.strategy, cfg.seed, index),
                       located)

    def _settle(self, run: Run) -> bool:
        """A run that needs this thread: check determinism, collect a failure, count it. True: stop exploring."""
        if self._again(run):
            return False
        session, cfg, result, index = self.session, self.config, self.result, self.index
        self.strat.end_execution(self.chooser, run.steps)
        result.leaked_threads.extend(run.leaked)
        if run.memory_steps.sampled and run.failure is not None:  # reported from the same execution watched whole
            widened = session.widen(run)
            if widened is None:  # it passed watched whole: no token replays the sampled failure; search on, whole
                self._count(run, index)
                self.index += 1
                return False
            run = widened
        stop = False
        if cfg.check_determinism:
            divergence = session.check_determinism(run)
            if divergence is not None:
                token = session.token(run, cfg.strategy, cfg.seed, index)
                info = FailureInfo("nondeterminism", ReplayDivergence(divergence), None)
                result.failure = failure_of(run, token, index, run, 0, info)
                result.failures.append(result.failure)
                stop = True
        if not stop and run.failure is not None:
            notes: list[str] = []
            run = attempt(lambda: session.located(run, result), "running the failure again with locations", notes,
                          run)
            self._races(run, index)
            stop = collect(session, run, index, result)
            if notes and result.failures:
                failure = result.failures[-1]
                failure.incomplete = "; ".join([*notes, failure.incomplete] if failure.incomplete else notes)
                stop = True
        elif not stop:
            result.passed += 1
            if self.races.wants_locations(run, found_races(run)):
                self.races.reruns += 1
                before = session.steps_run
                again = session.with_locations(run, result)
                self.races.rerun_steps += session.steps_run - before
                self._races(run if again is None else again, index, located=True)
            else:
                self._races(run, index)
        self._count(run, index)
        self.index += 1
        return stop
