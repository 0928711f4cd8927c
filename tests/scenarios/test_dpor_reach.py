"""What dpor reaches on the checkpoint IO: stock Lightning's race found, and ``LockedAsyncCheckpointIO`` proven with
no preemption bound, every class of equivalent interleavings explored, on the small scenarios and on Lightning's
own check of the plugin (validate, then a 3-epoch fit). The class counts are pinned, as the dfs counts of the
upstream check are: a change that silently shrinks the search (fewer scheduling points, a relation that drops a
conflict) fails here, and a deliberate change of the fixed IO updates them. Counts and times are printed;
docs/performance.md has them. Never timed here: the assertion is exhaustion, not speed.

Two proofs of each: with memory watching (the default), which covers the IO's own state (its queue, its worker
handle, an operation's state) as well as its lock, files and threads; and with ``memory=False``, the proof over
synchronisation and files alone that predates it (faster; its counts are the earlier ones)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("lightning")

import racecheck  # noqa: E402
import racecheck.fakefs  # noqa: E402
from racecheck import scenarios  # noqa: E402

# Classes of equivalent interleavings of each scenario against the fixed IO (the same under posix and windows),
# with memory=False, and with memory watched.
CLASSES = {"delete-while-queued": 79, "teardown-flush": 1426, "windows-replace-open": 126, "workload": 39792}
MEMORY_CLASSES = {"delete-while-queued": 252, "teardown-flush": 8633}
UPSTREAM_CLASSES = 312  # Lightning's test_async_checkpoint_plugin body, posix and windows
CAP = 2_000_000


@pytest.mark.parametrize("name", ["delete-while-queued", "delete-while-writing"])
def test_dpor_finds_the_race_in_stock_lightning(name):
    result = scenarios.run(name, target=scenarios.STOCK_TARGET, fs="posix", strategy="dpor", schedules=200, seed=0)
    assert not result.ok and "written anyway" in result.failure.message
    assert result.failure.token.startswith("rc1.dpor.")


def _reach(name: str, fs: str, memory: bool = False) -> None:  # noqa: FBT001
    started = time.perf_counter()
    result = scenarios.run(name, target=scenarios.FIXED_TARGET, fs=fs, strategy="dpor", schedules=CAP, seed=0,
                           memory=memory)
    assert result.ok, str(result.failure)
    assert result.exhausted, f"{name} [{fs}]: {result.schedules} schedules, not exhausted"
    print(f"{name} [{fs}] fixed IO{', memory watched' if memory else ''}: dpor exhausted, {result.interleavings} "
          f"classes in {result.schedules} schedules, {time.perf_counter() - started:.0f}s")
    assert result.interleavings == (MEMORY_CLASSES if memory else CLASSES)[name]


@pytest.mark.parametrize("fs", ["posix", "windows"])
@pytest.mark.parametrize("name", ["delete-while-queued", "teardown-flush", "windows-replace-open"])
def test_dpor_exhausts_the_fixed_io_with_no_bound(name, fs):
    _reach(name, fs)


@pytest.mark.parametrize("fs", ["posix", "windows"])
def test_dpor_exhausts_the_fixed_io_with_memory_watched(fs):
    """delete-while-queued with every access of the IO's own state a point too: 252 classes, ~15 s."""
    _reach("delete-while-queued", fs, memory=True)


@pytest.mark.slow
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("fs", ["posix", "windows"])
def test_dpor_exhausts_the_fixed_io_on_teardown_flush_with_memory_watched(fs):
    """teardown-flush with memory watched: 8,633 classes in 14,031 schedules, ~10 minutes on this 2-core machine."""
    _reach("teardown-flush", fs, memory=True)


@pytest.mark.slow
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("fs", ["posix", "windows"])
def test_dpor_exhausts_the_fixed_io_on_the_generated_workload(fs):
    """The default generated workload (13 calls, two teardowns): 39,792 classes, 5-7 minutes each."""
    _reach("workload", fs)


def _upstream_check(plugin_class_name: str):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixed_impl"))
    from test_upstream_async_plugin import on_fake_fs  # the same body as tests/fixed_impl explores with dfs

    if plugin_class_name == "fixed":
        from racecheck.fixed_impl import LockedAsyncCheckpointIO as plugin_class
    else:
        from lightning.pytorch.plugins.io.async_plugin import AsyncCheckpointIO as plugin_class
    return on_fake_fs(plugin_class)


@pytest.mark.parametrize("fs", ["posix", "windows"])
def test_dpor_proves_the_fixed_io_on_the_upstream_check_with_no_bound(fs):
    """Lightning's test_async_checkpoint_plugin body (validate, then a 3-epoch fit with top-2 eviction) on the fixed
    IO: every class of equivalent interleavings, with no preemption bound (dfs needs 997 schedules for bound 2
    alone)."""
    started = time.perf_counter()
    result = racecheck.explore(_upstream_check("fixed"), strategy="dpor", schedules=CAP, seed=0, fs=fs, memory=False)
    result.raise_on_failure()
    assert result.exhausted
    print(f"upstream check [{fs}] fixed IO: dpor exhausted, {result.interleavings} classes in {result.schedules} "
          f"schedules, {time.perf_counter() - started:.0f}s")
    assert result.interleavings == UPSTREAM_CLASSES


@pytest.mark.parametrize("fs", ["posix", "windows"])
def test_dpor_fails_the_stock_plugin_on_the_upstream_check(fs):
    """Not vacuous: the same search over the same body with Lightning's own AsyncCheckpointIO fails (fsspec's commit
    racing the remove of the oldest checkpoint)."""
    result = racecheck.explore(_upstream_check("stock"), strategy="dpor", schedules=CAP, seed=0, fs=fs,
                               shrink_budget=20, memory=False)
    assert not result.ok
    assert "epoch=0-step=1.ckpt" in result.failure.message
