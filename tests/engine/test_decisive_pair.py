"""The decisive pair under every strategy (issue 49, item 4): on programs whose failure one pair of accesses decides,
the racing pair is on the object that pair must be on (the one the failing check read, not the executor's queue or
the test's own list), has a write on one side, and is the pair dpor names; where no single swap fixes the failure
(two leaked files), no pair is named and the failure says so, naming the pairs that decide together."""

import pytest
import racecheck
from decisive_programs import DECIDED, two_leaked_files
from racecheck.search.race import NO_SINGLE_PAIR

STRATEGIES = ["random", "pct", "pos", "dfs", "dpor"]
# plain dfs, depth first, does not reach the executor's lost update within 300 schedules (4 interleavings)
NOT_FOUND = {("pool_lost_update", "dfs")}
WRITES = ("write", "put", "create", "remove", "rename", "fs.open", "fs.remove")


def _race(fn, strategy):
    result = racecheck.explore(fn, strategy=strategy, schedules=300, seed=0)
    assert result.failure is not None, result.verdict()
    return result.failure


def _shape(race):
    """The pair without thread numbers: the two operations (read or write of what, where), in order."""
    return ((race.first.op.split(" ")[0], race.first.loc), (race.second.op.split(" ")[0], race.second.loc))


@pytest.mark.parametrize("fn", list(DECIDED), ids=lambda fn: fn.__name__)
def test_the_pair_is_on_the_deciding_object_with_a_write_and_agrees_with_dpor(fn):
    expected = DECIDED[fn]
    dpor = _race(fn, "dpor").race
    assert dpor is not None and dpor.resource.endswith(expected), dpor
    for strategy in STRATEGIES:
        if (fn.__name__, strategy) in NOT_FOUND:
            continue
        failure = _race(fn, strategy)
        race = failure.race
        assert race is not None, f"{strategy}: {failure.notes}"
        assert race.resource.endswith(expected), (strategy, str(race))
        assert race.first.tid != race.second.tid
        assert any(side.op.startswith(WRITES) for side in (race.first, race.second)), (strategy, str(race))
        assert _shape(race) == _shape(dpor), (strategy, str(race), str(dpor))
        assert race.swapped_outcome == "passes"
        assert str(failure).splitlines()[0] == str(race)


def test_a_write_joined_to_another_step_is_named_as_the_write():
    """The writer's store runs inside a real lock's critical section, so it joined the writer's first step: the pair
    names the write itself (and the step it joined), not the step's own operation."""
    race = _race(list(DECIDED)[3], "pct").race
    assert race.second.op == "write dict#1['port']" and race.second.within == "begin", str(race)
    assert "write dict#1['port'] (in begin)" in str(race)


@pytest.mark.parametrize("strategy", ["pct", "dpor"])
def test_no_single_pair_says_so_and_names_the_pairs_that_decide_together(strategy):
    failure = _race(two_leaked_files, strategy)
    assert failure.race is None
    note = " ".join(failure.notes)
    assert note.startswith(NO_SINGLE_PAIR), failure.notes
    assert "fs.open $TMP1/a" in note and "fs.open $TMP1/b" in note and "fs.listdir" in note
    assert NO_SINGLE_PAIR in str(failure)
