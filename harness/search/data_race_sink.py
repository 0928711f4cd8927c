"""The data-race finder as a sink of the run (``racecheck.runtime.sinks``): handed to every run of a session that
reports data races, it finds them step by step as the run goes, and what it found is read from the sink, not from a
field the search would park on the run.

It reads the events the run's steps are made of (``Sink.events``), not the ``Step`` values: at each of the run's
decisions every event so far is final, and the finder (``racecheck.search.race_clocks``) advances its vector clocks
over the new ones (``READ_EVERY`` at a time), as FastTrack does, a pair found when its later access is read. A
``Step`` merges what the finder orders by (each note's and joined access's own point, line and trace index), and
building the run's steps as it goes cost bench_engine's no-op workload about 7% CPU (docs/architecture.md,
"Sinks"), which reading the events does not. ``end`` only closes: the last events, and what a report reads once the
run has ended (source lines, atomic additions).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from racecheck.runtime.scheduler import Run
from racecheck.runtime.sinks import Sink
from racecheck.runtime.steps import RunEnd
from racecheck.search.race_clocks import Found, RaceClocks

__racecheck_engine__ = True

# The finder reads the final events once this many have come: each read costs a call and its setup, about as much
# as a step's own work, so reading at every decision (one or two events each) cost the memory-watched micro workload
# a few percent; read in batches it costs what the whole-trace pass did, and still never holds more than a batch.
READ_EVERY = 32


class DataRaceSink(Sink):
    """One run's data races: ``found`` once the run has ended (each pair once, in trace order of the later
    access), empty before."""

    def __init__(self, atomic: bool = False) -> None:
        self.atomic = atomic  # report pairs of atomic additions too (``Config.atomic_races``)
        self.found: list[Found] = []
        self.clocks = RaceClocks(atomic)
        self.closed = False
        self.every = READ_EVERY

    def begin(self, view: Any) -> None:
        self.found = []
        self.closed = False
        self.clocks = RaceClocks(self.atomic)
        self.clocks.view = view  # where the run's real-lock operations so far are read

    def events(self, trace: Sequence[Any]) -> None:  # told ``READ_EVERY`` events apart (``Sink.every``)
        self.clocks.feed(trace)

    def end(self, run_end: RunEnd) -> None:
        self.found = self.clocks.close(run_end)
        self.clocks.view = None
        self.closed = True

    def touched(self) -> Any:
        """The finder's shadow memory once the run has ended: every object a data access touched, keyed by the
        (thread, kind) pairs that did (``Sink.touched``), so the sampling strategies' shared-memory learning reads
        it rather than walking each access a third time (recorded, played here, then learned)."""
        return self.clocks.shadow if self.closed else None


def found_races(run: Run) -> list[Found]:
    """The data races the run's ``DataRaceSink`` found (none when it had no such sink: data races ignored)."""
    for sink in run.sinks:
        if type(sink) is DataRaceSink:
            return sink.found
    return []
