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
from racecheck.search.data_race_sink import DataRaceSink, found_races
from racecheck.search.random_walk import RandomChooser
from racecheck.search.session import Session

sys.path.insert(0, str(Path(__file__).resolve().parent))
import generated_race_programs as programs  # noqa: E402
from whole_trace_races import Ends, find  # noqa: E402


def _compare(plan, seeds) -> int:
    """Runs ``plan`` once per seed (alternately with and without locations) and checks, run by run, that both data-race
    sinks (atomic additions reported and not) found what the whole-trace pass finds; the number of races seen."""
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
@given(_plan, st.integers(0, 2**16))
def test_the_online_finder_finds_what_the_whole_trace_pass_finds(plan, seed):
    _compare(plan, [seed, seed + 1, seed + 2])


def test_the_comparison_sees_races_and_real_locks():
    """A plan with unordered writes, atomic additions and critical sections of real locks: both finders see races
    (the comparison is not between two empty lists), and the real locks are taken."""
    plan = ((("write", 0), ("append", 0), ("real", 0), ("real", 1)),
            (("write", 0), ("append", 1), ("real", 0), ("point", 0), ("real", 1)),
            (("read", 0), ("real", 1), ("peek", 1), ("set", 0)))
    assert _compare(plan, range(6)) > 0
