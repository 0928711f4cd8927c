"""A ``ProcessPoolExecutor`` or ``multiprocessing.Pool`` made inside a child has workers of the run
(grandchildren), its results settled in the child by a collector thread of the run: two workers rewriting one JSON
file lose an update, found by pct and replayed from its token; the locked twins are clean (proved by dpor under
``-m slow``); a pool the child never closes ends with it."""

import re

import proc46_programs as programs
import pytest
import racecheck


@pytest.mark.parametrize("name", [
    "child_pool_json",
    # ~40 s each on 2 cores: the executor's race is behind -m slow (its locked twin, clean, stays in the default suite)
    pytest.param("child_executor_json", marks=pytest.mark.slow),
    # a spawned child's executor: ~100 s on 2 cores (a fresh template per exploration, then every schedule's workers)
    pytest.param("spawned_child_executor_json", marks=pytest.mark.slow),
])
def test_a_childs_pool_workers_are_processes_of_the_run(name):
    fn = getattr(programs, name)
    result = racecheck.explore(fn, strategy="pct", schedules=40, seed=1)
    failure = result.failure
    assert failure is not None and "a worker's update was lost" in failure.message, failure
    assert result.processes == 4, result.processes  # the root, the child, its two workers
    assert "(child of P1)" in failure.trace, failure.trace
    assert not result.coverage.escaped, result.coverage.escaped
    again = racecheck.replay(fn, failure.token)
    # the same schedule; the workers name the child's temporary folder by its real name (a grandchild's view of
    # the real disk's names is the root's, which never saw the child's mkdtemp), random per run: masked here, in the
    # events (the rendered trace wraps a long path inside the random name, where no mask can find it whole)
    assert again.failure is not None and failure.events
    assert [_masked(repr(e)) for e in again.failure.events] == [_masked(repr(e)) for e in failure.events]


def _masked(trace):
    return re.sub(r"racecheck-json-\w+", "racecheck-json-*", trace)


@pytest.mark.parametrize("name", ["child_executor_json_locked", "child_pool_json_locked", "child_pool_left_open"])
def test_the_locked_twins_and_a_pool_left_open_run_clean(name):
    result = racecheck.explore(getattr(programs, name), strategy="random", schedules=4, seed=1)
    assert result.failure is None, result.failure
    assert result.processes == 4


@pytest.mark.slow  # each schedule forks a child and two workers: about 80 s each on the shared VM
@pytest.mark.parametrize("name", ["child_executor_json_locked", "child_pool_json_locked"])
def test_the_locked_twins_are_proved_by_dpor(name):
    result = racecheck.explore(getattr(programs, name), strategy="dpor", schedules=2000, seed=1)
    assert result.failure is None, result.failure
    assert result.exhausted, result.schedules
