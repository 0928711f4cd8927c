"""A thread whose target is code racecheck does not watch (a builtin such as ``out.append``, a C method) hands its
arguments and bound object over as watched code calling it would: the two appends below conflict, so dpor reaches
both orders that unbounded dfs reaches instead of proving the program correct after one."""

from __future__ import annotations

import threading

import pytest
import racecheck


def _appends(outcomes):
    def test():
        out = []
        threads = [threading.Thread(target=out.append, args=(n,)) for n in (1, 2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        outcomes.add(tuple(out))

    return test


def _updates(outcomes):
    def test():
        seen = {}
        threads = [threading.Thread(target=seen.update, kwargs={"last": n}) for n in (1, 2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        outcomes.add(seen["last"])

    return test


@pytest.mark.parametrize("program", [_appends, _updates])
def test_dpor_reaches_every_order_of_builtin_targets_that_dfs_does(program):
    outcomes = {"dfs": set(), "dpor": set()}
    dfs = racecheck.explore(program(outcomes["dfs"]), strategy="dfs", preemption_bound=None, schedules=500)
    dpor = racecheck.explore(program(outcomes["dpor"]), strategy="dpor", schedules=500)
    assert dfs.ok and dfs.exhausted and dpor.ok and dpor.exhausted
    assert len(outcomes["dfs"]) == 2, outcomes  # the order decides
    assert outcomes["dpor"] == outcomes["dfs"]


def test_the_racing_pair_names_the_builtin_target():
    def ordered():
        out = []
        threads = [threading.Thread(target=out.append, args=(n,)) for n in (1, 2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert out == [1, 2], out

    failure = racecheck.explore(ordered, strategy="dpor", schedules=50).failure
    assert failure is not None and failure.race is not None, failure
    assert failure.race.resource == "list#1" and "list.append" in str(failure.race), failure.race
