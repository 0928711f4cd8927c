"""A child's threads sharing a lock the child did not make. A ``threading.Lock`` the parent's thread made before
the fork is the child's own copy, whose acquire and release are points of the child's threads (``P1.fork.Lock#1``);
before, the child's first acquire of it raised "a controlled object was used by a thread outside its run". A real
lock made before the run orders the child's critical sections for the data-race report, as the parent's do;
before, the locked counter reported a data race on the child's dict."""

import child_lock_programs
import pytest
import racecheck


@pytest.mark.parametrize("name", ["parents_lock", "parents_rlock", "real_lock", "real_lock_spawn"])
def test_a_counter_under_a_lock_the_child_did_not_make_is_proved_clean(name):
    result = racecheck.explore(getattr(child_lock_programs, name), strategy="dpor", schedules=200, seed=1)
    assert result.ok, result.failure and result.failure.trace
    assert result.coverage.space == "exhausted" and result.data_races == [], result.data_races


@pytest.mark.parametrize("strategy", ["pct", "dpor"])
def test_the_unlocked_twin_is_found(strategy):
    result = racecheck.explore(child_lock_programs.unlocked, strategy=strategy, schedules=50, seed=1)
    assert result.failure is not None and "lost update in the child: 1" in result.failure.message, result.failure
    assert {r.obj for r in result.data_races} == {"P1.dict#1['n']"}, result.data_races


def test_the_childs_copy_of_the_parents_lock_is_a_point_of_its_own():
    """Named under the process as a copy: never the parent's ``Lock#1``, nor the child's own ``P1.Lock#1``."""
    result = racecheck.explore(child_lock_programs.parents_lock_shown, strategy="random", schedules=1, seed=1)
    trace = result.failure.trace
    assert "AssertionError: shown" in result.failure.message, result.failure.message
    assert "acquire P1.fork.Lock#1" in trace and "release P1.fork.Lock#1" in trace, trace
    assert "acquire Lock#1" in trace and "P1.Lock#1" not in trace, trace
