"""``manager-ranks-process`` (issue 48 items 3-4): managers over DCP's process-based ``async_save`` on two forked
ranks, each rank's checkpoint daemon a grandchild of the run. The default test only checks which managers the cell
takes (no process is started); the explorations are ``-m slow`` (a schedule starts two ranks and two daemons:
seconds each after the first, which warms the templates): the fixed manager clean under pct, the KempnerForge-style
one found with default options and its token replayed in a fresh process, and back-to-back saves (two daemons on
a rank) found with default options."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore:torch.distributed is disabled:UserWarning")

import racecheck  # noqa: E402
from racecheck import scenarios  # noqa: E402

CELL = "manager-ranks-process"
KEMPNER = scenarios.NAIVE_PROCESS_MANAGER_TARGETS[0]


def _prepared(spec, fs="posix"):
    return scenarios.get(CELL).build(scenarios.load_target(spec), fs)


def test_the_process_cell_takes_process_managers_only():
    cell = scenarios.get(CELL)
    fixed, naive = scenarios.load_target(scenarios.PROCESS_MANAGER_TARGET), scenarios.load_target(KEMPNER)
    thread = scenarios.load_target(scenarios.MANAGER_TARGET)
    assert cell.accepts(fixed) and cell.accepts(naive) and not cell.accepts(thread)
    assert scenarios.get("manager-ranks").accepts(fixed)  # a process manager runs in the thread cells too
    with pytest.raises(scenarios.ScenarioError, match="saver is 'process'.*DurableCheckpointManager's is 'thread'"):
        cell.build(thread, "posix")
    prepared = _prepared(scenarios.PROCESS_MANAGER_TARGET, "windows")
    assert prepared.explore_kwargs["memory"] is False and prepared.explore_kwargs["watchdog"] == 10.0
    assert "torch.distributed.checkpoint._async_process_executor" in prepared.explore_kwargs["instrument"]


@pytest.fixture(scope="module")
def kempner_found():
    prepared = _prepared(KEMPNER)
    return racecheck.explore(prepared.fn, strategy="pct", **prepared.explore_kwargs)


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_kempner_over_the_daemon_is_found_on_two_ranks_with_default_options(kempner_found):
    failure = kempner_found.failure
    assert failure is not None, f"pct found nothing in {kempner_found.schedules} schedules"
    assert "names a checkpoint that is not complete" in failure.message, failure.message
    assert "P1.T0 is T" in failure.trace and "P2.T0 is T" in failure.trace
    assert kempner_found.processes >= 5  # the root, two ranks, and each rank's daemon: processes of the run


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_kempner_over_the_daemon_token_replays_in_a_fresh_process(kempner_found):
    failure = kempner_found.failure
    assert failure is not None
    here = os.path.dirname(__file__)
    cases = [(KEMPNER, CELL, "posix", failure.token)]
    out = subprocess.run([sys.executable, os.path.join(here, "replay_tokens.py")], input=json.dumps(cases),
                         capture_output=True, text=True, timeout=1200)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = [json.loads(line) for line in out.stdout.splitlines() if line.startswith(("[", "null", '"'))]
    assert lines == [[failure.message, failure.trace]], (lines, out.stderr[-2000:])


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_back_to_back_saves_over_the_daemon_are_found_on_two_ranks_with_default_options():
    """The tracker is right; the daemons are not: a second save made while the first daemon starts starts
    another (the one-daemon oracle), or one rank skips the port broadcast the other enters (a deadlock)."""
    prepared = _prepared(scenarios.NAIVE_PROCESS_MANAGER_TARGETS[1])
    result = racecheck.explore(prepared.fn, strategy="pct", **prepared.explore_kwargs)
    failure = result.failure
    assert failure is not None, f"pct found nothing in {result.schedules} schedules"
    assert "checkpoint daemons in one process" in failure.message or "deadlock" in failure.message, failure.message


@pytest.mark.slow
@pytest.mark.timeout(4 * 3600)
@pytest.mark.parametrize(("fs", "seed"), [("posix", 21), ("windows", 22)])
def test_the_fixed_process_manager_long_pct_on_two_ranks(fs, seed):
    budget = int(os.environ.get("RACECHECK_SLOW_SCHEDULES", "30"))
    prepared = _prepared(scenarios.PROCESS_MANAGER_TARGET, fs)
    result = racecheck.explore(prepared.fn, strategy="pct", schedules=budget, seed=seed, **prepared.explore_kwargs)
    assert result.ok, result.failure
    assert result.schedules == budget
    print(f"{CELL} [{fs}] ProcessCheckpointManager: pct {result.schedules} schedules (seed {seed}), no failure")
