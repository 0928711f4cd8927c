"""The data-race finder as a sink of the run (``racecheck.runtime.sinks``): handed to every run of a session that
reports data races, it finds them once the run has ended, and what it found is read from the sink, not from a field
the search would park on the run.

The finder itself (``racecheck.search.data_races.find``) reads the ended run's trace and memory records from the
``RunEnd``, with vector clocks as FastTrack does, in one pass: a run's steps are only final once their thread has
moved on, and the finder orders a step's notes and joined accesses by the point each was made at, which the
trace events carry.
"""

from __future__ import annotations

from typing import Any

from racecheck.runtime.sinks import Sink
from racecheck.runtime.steps import RunEnd
from racecheck.search.data_races import Found, find

__racecheck_engine__ = True


class DataRaceSink(Sink):
    """One run's data races: ``found`` once the run has ended (each pair once, in trace order of the later
    access), empty before."""

    def __init__(self, atomic: bool = False) -> None:
        self.atomic = atomic  # report pairs of atomic additions too (``Config.atomic_races``)
        self.found: list[Found] = []

    def end(self, run_end: RunEnd) -> None:
        self.found = find(run_end, self.atomic)


def found_races(run: Any) -> list[Found]:
    """The data races the run's ``DataRaceSink`` found (none when it had no such sink: data races ignored)."""
    for sink in run.sinks:
        if type(sink) is DataRaceSink:
            return sink.found
    return []
