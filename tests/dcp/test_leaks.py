"""No process or daemon leaks (issue 48): a child of the run still running when the test ends is a finding, as an
exception escaping a thread is; a spawned child sends and receives on a served Pipe end."""

import multiprocessing

import dcp_children as children
import racecheck


def test_a_daemon_left_running_is_a_leak():
    result = racecheck.explore(children.daemon_left, strategy="random", seed=1, schedules=3)
    failure = result.failure
    assert failure is not None and failure.message.startswith("LeakedProcess: P1 (ForkProcess-1, a daemon) is still "
                                                              "running when the test ends, waiting in 'recv"), failure
    assert failure.not_a_race, failure  # it leaks under every schedule
    assert multiprocessing.active_children() == []  # reaped all the same


def test_a_daemon_told_to_stop_is_clean_and_dpor_proves_it():
    result = racecheck.explore(children.daemon_stopped, strategy="dpor", schedules=50)
    assert result.ok, result.failure
    assert result.coverage.space == "exhausted"


def test_a_spawned_daemon_talks_over_a_served_pipe():
    result = racecheck.explore(children.daemon_stopped_spawn, strategy="random", seed=1, schedules=1)
    assert result.ok, result.failure
    assert result.processes == 2
