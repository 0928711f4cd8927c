"""Same token, same trace, in another process (different hash seed): the scenario's test function, its paths
and its temp names are functions of the token alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("lightning")

import racecheck  # noqa: E402
from racecheck import scenarios  # noqa: E402

REPLAY = """
import json, sys, racecheck
from racecheck import scenarios
traces = []
for name, target, fs, token in json.loads(sys.argv[1]):
    prepared = scenarios.get(name).build(scenarios.load_target(target), fs)
    traces.append(racecheck.replay(prepared.fn, token, **prepared.explore_kwargs).failure.trace)
sys.stdout.write(json.dumps(traces))
"""
CASES = [("teardown-flush", scenarios.STOCK_TARGET, "windows"), ("crash-consistency", scenarios.STOCK_TARGET, "posix"),
         ("delete-while-writing", scenarios.LEGACY_TARGET, "windows")]


def test_failures_replay_byte_for_byte_in_another_process():
    jobs, traces = [], []
    for name, target, fs in CASES:
        prepared = scenarios.get(name).build(scenarios.load_target(target), fs)
        result = racecheck.explore(prepared.fn, strategy="random", schedules=50, seed=3, shrink_budget=20,
                                   **prepared.explore_kwargs)
        assert not result.ok
        jobs.append([name, target, fs, result.failure.token])
        traces.append(result.failure.trace)
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run([sys.executable, "-c", REPLAY, json.dumps(jobs)], capture_output=True, text=True, env=env,
                         timeout=600, check=True).stdout
    assert json.loads(out) == traces


def test_the_same_seed_explores_the_same_schedules():
    first = scenarios.run("workload", fs="posix", strategy="pct", schedules=30, seed=7, shrink_budget=0)
    second = scenarios.run("workload", fs="posix", strategy="pct", schedules=30, seed=7, shrink_budget=0)
    assert (first.schedules, first.failure.token, first.failure.trace) == \
        (second.schedules, second.failure.token, second.failure.trace)
