"""``multiprocessing.connection.wait`` on a grandchild's sentinel, and on served Pipe ends mixed with sentinels,
in a child and in the root: a point of the one scheduler (a program that needs the waited-on process to run is
proved by dpor, never a hang), with a deadlock through it reported as one."""

import proc46_programs as programs
import pytest
import racecheck


def _explore(name, strategy="dpor", **options):
    options.setdefault("schedules", 40)
    return racecheck.explore(getattr(programs, name), strategy=strategy, seed=1, **options)


@pytest.mark.parametrize("name", ["sentinel_wait", "mixed_wait", "root_mixed_wait"])
def test_waits_on_sentinels_and_ends_are_points_and_dpor_proves_the_programs(name):
    result = _explore(name, fs="posix" if name == "sentinel_wait" else None)
    assert result.failure is None, result.failure
    assert result.exhausted, (result.schedules, result.summary() if hasattr(result, "summary") else "")


def test_a_wait_on_a_grandchild_that_never_ends_is_a_deadlock():
    result = _explore("stuck_wait", schedules=5)
    failure = result.failure
    assert failure is not None and failure.kind == "deadlock", failure
    assert "wait P2" in failure.message and "wait mp.Event#1" in failure.message, failure.message
