"""Source locations are found for the schedules someone reads: explore runs its schedules without them and runs a
failing one again with them, so the reported trace is the one a replay prints, line numbers included."""

import functools
import threading

import classic_bugs
import pytest
import racecheck
from racecheck import runtime

# The subject here is when source lines are taken, not memory:
# explored with memory=False (memory watching adds a warm-up run and steps of its own).
_explore = functools.partial(racecheck.explore, memory=False)

located_runs: list[bool] = []


def lost_update_noting_locate():
    located_runs.append(runtime.current_run().locate)
    classic_bugs.lost_update()


def test_schedules_run_without_locations_and_the_failure_is_reported_with_them():
    located_runs.clear()
    result = _explore(lost_update_noting_locate, strategy="random", schedules=50, seed=1, shrink_budget=0,
                               race_budget=0, instrument=[classic_bugs])
    assert not result.ok
    # every schedule of the exploration ran without locations; the failing one once more with them
    assert located_runs[:-1] == [False] * (len(located_runs) - 1) and located_runs[-1] is True
    located = [event.loc for event in result.failure.events if event.op.startswith("point")]
    assert located and all(loc.startswith("classic_bugs.py:") for loc in located)
    again = racecheck.replay(lost_update_noting_locate, result.failure.token, instrument=[classic_bugs],
                             race_budget=0)  # as explored: no racing pair in either report
    assert again.failure.trace == result.failure.trace
    assert str(again.failure) == str(result.failure)


def test_a_shrunk_failure_and_its_racing_pair_have_locations():
    result = _explore(classic_bugs.lost_update, strategy="random", schedules=50, seed=1)
    assert not result.ok and result.failure.race is not None
    assert all(event.loc for event in result.failure.events if event.op.startswith("point"))
    assert "classic_bugs.py:" in str(result.failure.race)


def test_always_locates_every_schedule():
    located_runs.clear()
    result = _explore(lost_update_noting_locate, strategy="random", schedules=5, seed=2,
                               instrument=[classic_bugs], locations="always", max_failures=10)
    assert located_runs and all(located_runs)
    assert result.schedules >= 1


def test_check_determinism_compares_located_schedules():
    located_runs.clear()
    _explore(lost_update_noting_locate, strategy="random", schedules=3, seed=2, instrument=[classic_bugs],
                      check_determinism=True, shrink_budget=0)
    assert located_runs and all(located_runs)


def test_the_same_schedules_run_either_way():
    runs = [_explore(classic_bugs.lost_update_fixed, strategy="pct", schedules=40, seed=5, locations=mode)
            for mode in ("failures", "always")]
    assert [(r.schedules, r.distinct, r.interleavings) for r in runs][0] == \
        [(r.schedules, r.distinct, r.interleavings) for r in runs][1]


calls = {"n": 0}


def fails_only_the_first_time():
    calls["n"] += 1
    first = calls["n"] == 1

    def worker():
        racecheck.point("work")

    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert not first, "only the first call fails"


def test_a_failure_that_does_not_happen_again_is_reported_without_locations():
    """The second, located run of a nondeterministic failure passes: the original is reported as it was run."""
    calls["n"] = 0
    result = _explore(fails_only_the_first_time, strategy="random", schedules=5, seed=0, shrink_budget=0,
                               race_budget=0)
    assert not result.ok and "only the first call fails" in str(result.failure)
    assert calls["n"] == 2  # the failing schedule, then its located run (which passed)
    assert not any(event.loc for event in result.failure.events)


@pytest.mark.parametrize("bad", ["sometimes", "", None, True])
def test_an_unknown_locations_mode_is_refused(bad):
    with pytest.raises(ValueError, match="locations must be one of 'failures', 'always'"):
        racecheck.Config(locations=bad)
