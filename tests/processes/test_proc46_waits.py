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


# ----- Manager().Array and register (in this file: one module of procs46 tests) -------------------------------


@pytest.mark.parametrize("strategy", ["pct", "dpor"])
def test_a_lost_update_on_a_managers_array_is_found(strategy):
    result = _explore("manager_array_lost_update", strategy)
    failure = result.failure
    assert failure is not None and "lost update: items[0] == 1" in failure.message, failure
    assert "read mgr.Array#1[0]  @proc46_programs.py" in failure.trace, failure.trace
    assert "write mgr.Array#1[0]" in failure.trace and "ManagedArray" not in failure.trace, failure.trace


def test_the_locked_array_update_is_proved_by_dpor():
    result = _explore("manager_array_locked", schedules=200)
    assert result.failure is None, result.failure
    assert result.exhausted, result.schedules


def test_a_type_registered_on_a_manager_subclass_is_named_among_the_escapes():
    result = racecheck.explore(programs.manager_registered_type, strategy="random", schedules=1, seed=1)
    assert result.ok, result.failure
    assert any("a manager's server process (Models, registered: Model)" in line
               for line in result.coverage.escaped), result.coverage.escaped

