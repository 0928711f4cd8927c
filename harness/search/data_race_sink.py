"""The data-race finder as a sink of the run (``racecheck.runtime.sinks``): handed to every run of a session that
reports data races, it finds them step by step as the run goes, and what it found is read from the sink, not from a
field the search would park on the run.

Each finished step the run hands it (``step``) means every event of the trace so far is final: the finder
(``racecheck.search.race_clocks``) advances its vector clocks over them from the run's view, as FastTrack does, and
a pair is found when its later access arrives. ``end`` only closes: the last events, and what a report reads once
the run has ended (source lines, atomic additions).
"""

from __future__ import annotations

from typing import Any

from racecheck.runtime.sinks import Sink
from racecheck.runtime.steps import RunEnd, Step
from racecheck.search.race_clocks import Found, RaceClocks

__racecheck_engine__ = True


class DataRaceSink(Sink):
    """One run's data races: ``found`` once the run has ended (each pair once, in trace order of the later
    access), empty before."""

    def __init__(self, atomic: bool = False) -> None:
        self.atomic = atomic  # report pairs of atomic additions too (``Config.atomic_races``)
        self.found: list[Found] = []
        self.view: Any = None
        self.clocks = RaceClocks(atomic)

    def begin(self, view: Any) -> None:
        self.view = view
        self.found = []
        self.clocks = RaceClocks(self.atomic)

    def step(self, step: Step) -> None:
        view = self.view
        trace = view.trace
        if self.clocks.cursor < len(trace):  # the steps of one advance share its events: the first reads them all
            self.clocks.feed(trace, view.real_sync)

    def end(self, run_end: RunEnd) -> None:
        self.found = self.clocks.close(run_end)
        self.view = None


def found_races(run: Any) -> list[Found]:
    """The data races the run's ``DataRaceSink`` found (none when it had no such sink: data races ignored)."""
    for sink in run.sinks:
        if type(sink) is DataRaceSink:
            return sink.found
    return []
