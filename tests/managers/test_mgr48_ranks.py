"""Managers on two ranks (``manager-ranks``): the ranks are forked processes of the run in one modelled gloo group,
each with its own manager; rank 0's tracker and retention race the other rank's writes. The two-rank bug
(Rank0CommitManager: rank 0 commits when its own part is durable) is found by pct with default options and its
token replays in a fresh process; the same manager is clean on one rank; the fixed manager is clean on two."""

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

RANK0 = "racecheck.scenarios.naive_managers:Rank0CommitManager"


def _prepared(spec, name="manager-ranks", fs="posix"):
    return scenarios.get(name).build(scenarios.load_target(spec), fs)


@pytest.fixture(scope="module")
def rank0_found():
    prepared = _prepared(RANK0)
    return racecheck.explore(prepared.fn, strategy="pct", **prepared.explore_kwargs)


def test_rank0_commit_is_found_on_two_ranks_by_pct_with_default_options(rank0_found):
    failure = rank0_found.failure
    assert failure is not None, f"pct found nothing in {rank0_found.schedules} schedules"
    assert "names a checkpoint that is not complete" in failure.message, failure.message
    assert "/rank_1 " in failure.message, failure.message  # the other rank's part, still being written
    assert "P1.T0 is T" in failure.trace and "P2.T0 is T" in failure.trace


def test_rank0_commit_token_replays_in_a_fresh_process(rank0_found):
    failure = rank0_found.failure
    here = os.path.dirname(__file__)
    cases = [(RANK0, "manager-ranks", "posix", failure.token)]
    out = subprocess.run([sys.executable, os.path.join(here, "replay_tokens.py")], input=json.dumps(cases),
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = [json.loads(line) for line in out.stdout.splitlines() if line.startswith(("[", "null", '"'))]
    assert lines == [[failure.message, failure.trace]], (lines, out.stderr[-2000:])


def test_rank0_commit_is_right_on_one_rank():
    prepared = _prepared(RANK0, "manager-retention")
    result = racecheck.explore(prepared.fn, strategy="pct", schedules=3, seed=0, **prepared.explore_kwargs)
    assert result.ok, result.failure


def test_the_fixed_manager_is_clean_on_two_ranks():
    prepared = _prepared(scenarios.MANAGER_TARGET)
    result = racecheck.explore(prepared.fn, strategy="pct", schedules=3, seed=3, **prepared.explore_kwargs)
    assert result.ok, result.failure


@pytest.mark.slow
@pytest.mark.timeout(3600)
@pytest.mark.parametrize("manager", ["MegatronStyleManager", "MegatronScanManager", "SkyRLStyleManager",
                                     "KempnerStyleManager"])
def test_each_one_rank_naive_manager_fails_on_two_ranks_too(manager):
    prepared = _prepared(f"racecheck.scenarios.naive_managers:{manager}")
    result = racecheck.explore(prepared.fn, strategy="pct", schedules=20, shrink_budget=0,
                               **prepared.explore_kwargs)
    assert not result.ok, f"{manager}: pct found nothing on two ranks"


@pytest.mark.slow
@pytest.mark.timeout(4 * 3600)
@pytest.mark.parametrize(("fs", "seed"), [("posix", 11), ("windows", 12)])
def test_the_fixed_manager_long_pct_on_two_ranks(fs, seed):
    """windows, seed 12 found (schedule #36) the barrier the fixed manager lacked after rank 0's commit: rank 1
    read ``latest`` while rank 0 renamed over it (WinError 5)."""
    budget = int(os.environ.get("RACECHECK_SLOW_SCHEDULES", "200"))
    prepared = _prepared(scenarios.MANAGER_TARGET, fs=fs)
    result = racecheck.explore(prepared.fn, strategy="pct", schedules=budget, seed=seed, **prepared.explore_kwargs)
    assert result.ok, result.failure
    print(f"manager-ranks [{fs}] fixed manager: pct {result.schedules} schedules, no failure")
