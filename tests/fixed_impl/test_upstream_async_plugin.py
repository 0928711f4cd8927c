"""Lightning's own check of ``AsyncCheckpointIO`` (``test_async_checkpoint_plugin``), run against the fixed IO.

The check is defined once, in tests/plugin/upstream_async_checkpoint.py (which names the upstream file and release
it mirrors); the plugin suite runs it on the stock plugin through the pytest marker, this module runs it on
``LockedAsyncCheckpointIO`` under ``racecheck.explore``, in a directory of the fake filesystem so that every file
operation is a scheduling point. Every explored schedule must pass, under POSIX and Windows semantics. Upstream
retries the test (``flaky(reruns=3)``); the same check with the stock plugin fails here, found and replayed.

The default suite runs a few schedules of each strategy and the bound-1 searches; ``-m slow`` runs 500 schedules
each of pct and random per semantics, and the bound-2 searches.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import sys
from pathlib import Path

import pytest
import racecheck
import racecheck.fakefs
import torch
from lightning.pytorch.plugins.io.async_plugin import AsyncCheckpointIO
from racecheck.fixed_impl import LockedAsyncCheckpointIO

# The fixed IO's behaviour is the subject here, over Lightning's own check (validate, then a fit) per schedule,
# dfs to a bound: explored with memory=False, the proof over synchronisation and files (memory watching's proofs
# of the IO are in tests/scenarios/test_dpor_reach.py).
explore_without_memory = functools.partial(racecheck.explore, memory=False)


def _load_upstream_check():
    """The plugin suite's module, loaded from its file: the pytester copy there must stand alone, so the check
    lives in that file and is imported from here by path."""
    path = Path(__file__).parents[1] / "plugin" / "upstream_async_checkpoint.py"
    name = "upstream_async_checkpoint"
    module = sys.modules.get(name)
    if module is None or Path(module.__file__).resolve() != path.resolve():
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return module


upstream = _load_upstream_check()

SEMANTICS = ["posix", "windows"]


def on_fake_fs(plugin_class):
    """A schedule's body: the upstream check in a fresh directory of that schedule's fake filesystem."""

    def run_upstream_check() -> None:
        upstream.check_async_checkpoint_plugin(os.path.join(racecheck.fakefs.root(), "upstream"), plugin_class)

    return run_upstream_check


def _explore(fn, fs, strategy, schedules, **kw):
    return explore_without_memory(fn, strategy=strategy, schedules=schedules, seed=0, fs=fs, **kw)


def test_upstream_check_passes_on_a_real_directory(tmp_path):
    upstream.check_async_checkpoint_plugin(tmp_path, LockedAsyncCheckpointIO)
    assert sorted(p.name for p in tmp_path.glob("*.ckpt")) == upstream.KEPT_FILES


@pytest.mark.parametrize("strategy", ["pct", "random"])
@pytest.mark.parametrize("fs", SEMANTICS)
def test_upstream_check_under_racecheck(fs, strategy):
    result = _explore(on_fake_fs(LockedAsyncCheckpointIO), fs, strategy, 3)
    result.raise_on_failure()
    assert result.schedules == 3


@pytest.mark.slow
@pytest.mark.parametrize("strategy", ["pct", "random"])
@pytest.mark.parametrize("fs", SEMANTICS)
def test_upstream_check_under_racecheck_500_schedules(fs, strategy):
    result = _explore(on_fake_fs(LockedAsyncCheckpointIO), fs, strategy, 500)
    result.raise_on_failure()
    # the whole budget, unless the space is smaller: then every distinct schedule ran once (skip_duplicates)
    assert result.schedules == 500 or (result.exhausted and result.schedules == result.distinct < 500)


@pytest.mark.slow
def test_upstream_check_fails_with_the_stock_plugin():
    """Not vacuous: the same check with Lightning's AsyncCheckpointIO fails under racecheck (the flake upstream
    retries), found by pct and replayed from its token."""
    stock = on_fake_fs(AsyncCheckpointIO)
    result = explore_without_memory(stock, strategy="pct", schedules=500, seed=0, fs="posix")
    assert not result.ok
    again = racecheck.replay(stock, result.failure.token, fs="posix")
    assert again.failure is not None and again.failure.trace == result.failure.trace


# Schedules in the whole space of the full check within each preemption bound, pinned so that a change that
# silently shrinks the search (fewer scheduling points, a DFS that stops early) fails here. Bound 2 is slow, which
# is why the IO-level version further down exists too.
FULL_CHECK_DFS = {("posix", 1): 34, ("windows", 1): 31, ("posix", 2): 997, ("windows", 2): 814}


@pytest.mark.parametrize("bound", [1, pytest.param(2, marks=pytest.mark.slow)])
@pytest.mark.parametrize("fs", SEMANTICS)
def test_upstream_check_dfs_exhausted(fs, bound):
    """The whole upstream check (validate, then a 3-epoch fit with top-2 eviction), every schedule within the
    preemption bound, exhausted: the fixed IO passes all of them."""
    result = _explore(on_fake_fs(LockedAsyncCheckpointIO), fs, "dfs", 100_000, preemption_bound=bound)
    result.raise_on_failure()
    assert result.exhausted
    assert result.schedules == FULL_CHECK_DFS[(fs, bound)]


@pytest.mark.parametrize("fs", ["posix", pytest.param("windows", marks=pytest.mark.slow)])
def test_upstream_check_dfs_catches_the_stock_plugin(fs):
    """Not vacuous: the same bounded search over the same check with Lightning's own AsyncCheckpointIO fails at
    preemption bound 2 (the remove racing fsspec's commit)."""
    result = explore_without_memory(
        on_fake_fs(AsyncCheckpointIO), strategy="dfs", schedules=100_000, preemption_bound=2, seed=0, fs=fs,
        shrink_budget=50,
    )
    assert not result.ok
    assert result.failure.preemptions <= 2


def upstream_io_calls():
    """The IO-level part of the upstream check: the plugin calls the Trainer makes in it, in its order (recorded
    from a real run: validate ends in a teardown; fit saves epochs 0, 1 and 2, removes epoch 0 after the third save,
    and tears down), on a plugin and an inner ``TorchCheckpointIO`` counted as the check counts them, with its
    expected calls and the files top-2 must leave. Small enough to exhaust with DFS."""
    from lightning.fabric.plugins import TorchCheckpointIO

    directory = os.path.join(racecheck.fakefs.root(), "upstream")
    plugin = LockedAsyncCheckpointIO()
    upstream.count_calls(plugin)
    plugin.checkpoint_io = TorchCheckpointIO()  # what the strategy plugs in
    plugin.teardown()  # the end of trainer.validate
    inner = plugin.checkpoint_io
    upstream.count_calls(inner)  # on_fit_start
    paths = [os.path.join(directory, f"epoch={e}-step={e + 1}.ckpt") for e in range(upstream.EPOCHS)]
    for epoch, path in enumerate(paths):
        plugin.save_checkpoint({"epoch": epoch, "state_dict": {"w": torch.full((2,), float(epoch))}}, path)
    plugin.remove_checkpoint(paths[0])  # top-2 evicts the oldest
    plugin.teardown()  # the end of trainer.fit

    assert upstream.calls_made(plugin) == upstream.EXPECTED_CALLS
    assert upstream.calls_made(inner) == upstream.EXPECTED_CALLS
    assert sorted(n for n in os.listdir(directory) if n.endswith(".ckpt")) == upstream.KEPT_FILES


@pytest.mark.parametrize("bound", [1, pytest.param(2, marks=pytest.mark.slow)])
@pytest.mark.parametrize("fs", SEMANTICS)
def test_upstream_io_calls_dfs_exhausted(fs, bound):
    """Every schedule of the upstream check's IO-level calls within the preemption bound (bound 2: 884 schedules
    on posix, 713 on windows)."""
    result = _explore(upstream_io_calls, fs, "dfs", 100_000, preemption_bound=bound)
    result.raise_on_failure()
    assert result.exhausted
