"""Removing a directory tree and creating a file inside it conflict under the fake filesystem: dpor reaches every
outcome an unbounded dfs reaches (the write first, the tree first, the create between the walk and the removal), on
both semantics. A relation that let them commute would prove a retention race absent (tests/ranks' retention)."""

from __future__ import annotations

import os
import shutil
import threading

import pytest
import racecheck

R = "/racefs"


def _program(outcomes):
    def test():
        d = f"{R}/step1"
        os.makedirs(d)
        written = {}

        def retention():
            shutil.rmtree(d, ignore_errors=True)

        def save():
            try:
                with open(f"{d}/rank1.pt", "w") as f:
                    f.write("shard")
                written["save"] = "ok"
            except OSError as exc:
                written["save"] = type(exc).__name__

        threads = [threading.Thread(target=retention), threading.Thread(target=save)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        outcomes.add((written["save"], os.path.exists(d), os.path.exists(f"{d}/rank1.pt")))

    return test


@pytest.mark.parametrize("fs", ["posix", "windows"])
def test_dpor_reaches_every_outcome_of_rmtree_against_a_create_beneath(fs):
    outcomes = {"dfs": set(), "dpor": set()}
    dfs = racecheck.explore(_program(outcomes["dfs"]), strategy="dfs", preemption_bound=None, schedules=5000,
                            memory=False, fs=fs)
    dpor = racecheck.explore(_program(outcomes["dpor"]), strategy="dpor", schedules=5000, memory=False, fs=fs)
    for result in (dfs, dpor):
        assert result.ok and result.exhausted, result.failure
    assert outcomes["dpor"] == outcomes["dfs"]
    assert dpor.schedules < dfs.schedules
    assert ("ok", True, True) in outcomes["dfs"] and len(outcomes["dfs"]) > 1  # the order decides
