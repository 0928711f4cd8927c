"""What dpor reaches on the checkpoint IO: stock Lightning's race found, and ``LockedAsyncCheckpointIO`` proven with
no preemption bound, every class of equivalent interleavings explored (slow: minutes each), on the small scenarios
and on Lightning's own check of the plugin (validate, then a 3-epoch fit). Counts and times are printed;
docs/performance.md has them. Never timed here: the assertion is exhaustion, not speed."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("lightning")

import racecheck  # noqa: E402
import racecheck.fakefs  # noqa: E402
from racecheck import scenarios  # noqa: E402

REACH = ("delete-while-queued", "teardown-flush", "windows-replace-open", "workload")
CAP = 2_000_000


@pytest.mark.parametrize("name", ["delete-while-queued", "delete-while-writing"])
def test_dpor_finds_the_race_in_stock_lightning(name):
    result = scenarios.run(name, target=scenarios.STOCK_TARGET, fs="posix", strategy="dpor", schedules=200, seed=0)
    assert not result.ok and "written anyway" in result.failure.message
    assert result.failure.token.startswith("rc1.dpor.")


@pytest.mark.slow
@pytest.mark.timeout(3600)
@pytest.mark.parametrize("fs", ["posix", "windows"])
@pytest.mark.parametrize("name", REACH)
def test_dpor_exhausts_the_fixed_io_with_no_bound(name, fs):
    started = time.perf_counter()
    result = scenarios.run(name, target=scenarios.FIXED_TARGET, fs=fs, strategy="dpor", schedules=CAP, seed=0)
    assert result.ok, str(result.failure)
    assert result.exhausted, f"{name} [{fs}]: {result.schedules} schedules, not exhausted"
    print(f"{name} [{fs}] fixed IO: dpor exhausted, {result.interleavings} classes in {result.schedules} schedules, "
          f"{time.perf_counter() - started:.0f}s")


def _upstream_check():
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixed_impl"))
    from racecheck.fixed_impl import LockedAsyncCheckpointIO
    from test_upstream_async_plugin import on_fake_fs  # the same body as tests/fixed_impl explores with dfs

    return on_fake_fs(LockedAsyncCheckpointIO)


@pytest.mark.slow
@pytest.mark.timeout(3 * 3600)
@pytest.mark.parametrize("fs", ["posix", "windows"])
def test_dpor_on_the_upstream_check_with_no_bound(fs):
    """Lightning's test_async_checkpoint_plugin body on the fixed IO: every class, or as far as the budget goes
    (RACECHECK_UPSTREAM_DPOR_SCHEDULES, default 20,000; a schedule is a whole validate + fit). Prints how far."""
    budget = int(os.environ.get("RACECHECK_UPSTREAM_DPOR_SCHEDULES", "20000"))
    started = time.perf_counter()
    result = racecheck.explore(_upstream_check(), strategy="dpor", schedules=budget, seed=0, fs=fs)
    result.raise_on_failure()
    state = "exhausted" if result.exhausted else "not exhausted"
    print(f"upstream check [{fs}] fixed IO: dpor {state}, {result.interleavings} classes in {result.schedules} "
          f"schedules, {time.perf_counter() - started:.0f}s")
