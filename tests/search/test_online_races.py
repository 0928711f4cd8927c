"""The data-race finder runs online (``racecheck.search.race_clocks``, fed step by step through the data-race sink):
on generated programs, every run's races are exactly those the whole-trace pass over its ended trace finds
(``whole_trace_races.find``, the finder as it was before), with locations and without, atomic additions reported or
not, under racecheck's locks and real locks made before the run alike."""

from __future__ import annotations

import random
import sys
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from racecheck.config import resolve
from racecheck.search import data_race_sink
from racecheck.search.data_race_sink import DataRaceSink, found_races
from racecheck.search.random_walk import RandomChooser
from racecheck.search.session import Session

sys.path.insert(0, str(Path(__file__).resolve().parent))
import generated_race_programs as programs  # noqa: E402
from whole_trace_races import Ends, Watched, find  # noqa: E402


def _compare(plan, seeds, read_every: int = 1) -> int:
    """Runs ``plan`` once per seed (alternately with and without locations) and checks, run by run, that both data-race
    sinks (atomic additions reported and not) found what the whole-trace pass finds; the number of races seen.
    ``read_every``: how many final events the sinks wait for before they read (1: at every decision)."""
    saved = data_race_sink.READ_EVERY
    data_race_sink.READ_EVERY = read_every
    try:
        return _compare_runs(plan, seeds)
    finally:
        data_race_sink.READ_EVERY = saved


def _compare_runs(plan, seeds) -> int:
    session = Session(programs.program(plan), resolve(None, {}, "explore").parts())
    ends: list[Ends] = []
    atomic: list[DataRaceSink] = []
    session.sink_factories.append(lambda: ends.append(Ends()) or ends[-1])
    session.sink_factories.append(lambda: atomic.append(DataRaceSink(True)) or atomic[-1])
    runs = []
    with session.controlled():
        session.warm_up()
        for k, seed in enumerate(seeds):
            runs.append(session.run_once(RandomChooser(random.Random(seed)), locate=k % 2 == 0))
    seen = 0
    # one sink of each per run made; the warm-up's come first, and a run made again (code came under watch) too
    for run in runs:
        ended = next(sink for sink in run.sinks if type(sink) is Ends).ends
        assert len(ended) == 1
        both = next(sink for sink in run.sinks if type(sink) is DataRaceSink and sink.atomic)
        assert found_races(run) == find(ended[0], False)
        assert both.found == find(ended[0], True)
        seen += len(both.found)
    return seen


_op = st.tuples(st.sampled_from(programs.OPS), st.integers(0, 3))
_plan = st.lists(st.lists(_op, min_size=1, max_size=4).map(tuple), min_size=2, max_size=3).map(tuple)


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(_plan, st.integers(0, 2**16), st.sampled_from([1, 3, data_race_sink.READ_EVERY]))
def test_the_online_finder_finds_what_the_whole_trace_pass_finds(plan, seed, read_every):
    _compare(plan, [seed, seed + 1, seed + 2], read_every)


def test_the_comparison_sees_races_and_real_locks():
    """A plan with unordered writes, atomic additions and critical sections of real locks: both finders see races
    (the comparison is not between two empty lists), and the real locks are taken."""
    plan = ((("write", 0), ("append", 0), ("real", 0), ("real", 1)),
            (("write", 0), ("append", 1), ("real", 0), ("point", 0), ("real", 1)),
            (("read", 0), ("real", 1), ("peek", 1), ("set", 0)))
    assert _compare(plan, range(6)) > 0
    assert _compare(plan, range(6), 5) > 0


def test_races_are_found_while_the_run_goes():
    """Read at every decision, the sink has read most of the run and found its pairs before the run ends."""
    plan = ((("write", 0), ("point", 0), ("write", 1), ("point", 0), ("read", 0)),
            (("write", 0), ("point", 0), ("write", 1), ("point", 0), ("read", 1)))
    saved = data_race_sink.READ_EVERY
    data_race_sink.READ_EVERY = 1
    session = Session(programs.program(plan), resolve(None, {}, "explore").parts())
    session.sink_factories.append(Watched)
    try:
        with session.controlled():
            session.warm_up()
            runs = [session.run_once(RandomChooser(random.Random(seed))) for seed in range(4)]
    finally:
        data_race_sink.READ_EVERY = saved
    early = 0
    for run in runs:
        sink = next(sink for sink in run.sinks if type(sink) is Watched)
        read, found = sink.before_end
        assert read > len(run.trace) // 2
        early += found > 0 and found <= len(sink.found)
    assert early
