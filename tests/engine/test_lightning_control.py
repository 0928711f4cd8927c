"""Stock Lightning AsyncCheckpointIO comes under control (by default, or by instrumenting its module as before): its
own executor worker is a controlled thread, and the delete-while-queued race is found, replayed exactly and shrunk."""

import os
import shutil
import tempfile

import pytest
import racecheck

torch = pytest.importorskip("torch")
async_plugin = pytest.importorskip("lightning.pytorch.plugins.io.async_plugin")
from lightning.pytorch.plugins.io.torch_plugin import TorchCheckpointIO  # noqa: E402

MODULE = "lightning.pytorch.plugins.io.async_plugin"


def save_save_remove_teardown():
    """The micro workload: save(a); save(b); remove(a); teardown(); a must be gone."""
    directory = tempfile.mkdtemp(prefix="racecheck-")
    try:
        io = async_plugin.AsyncCheckpointIO(TorchCheckpointIO())
        a, b = os.path.join(directory, "a.ckpt"), os.path.join(directory, "b.ckpt")
        io.save_checkpoint({"w": torch.zeros(2)}, a)
        io.save_checkpoint({"w": torch.ones(2)}, b)
        io.remove_checkpoint(a)
        io.teardown()
        if os.path.exists(a):  # not a bare assert: pytest's rewrite would put the random temp path in the message
            raise AssertionError("a.ckpt was removed, then its queued write recreated it (leaked checkpoint)")
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def test_stock_async_checkpoint_io_race_is_found_and_replayed():
    result = racecheck.explore(save_save_remove_teardown, strategy="pct", schedules=200, instrument=[MODULE])
    assert not result.ok
    failure = result.failure
    assert "leaked checkpoint" in failure.message
    # the executor worker is a controlled thread: its pickups appear in the trace under T1
    assert "T1" in failure.trace.splitlines()[0]
    assert "get Executor#1.queue" in failure.trace
    for _ in range(20):
        again = racecheck.replay(save_save_remove_teardown, failure.token, instrument=[MODULE])
        assert again.failure.trace == failure.trace


def test_the_worker_is_controlled_with_no_module_named_and_exclude_keeps_it_real():
    """Control by default: Lightning's executor is the controlled one without naming its module, and the race is
    found the same way; ``exclude=`` keeps the module real (the gap other Python tools leave)."""
    seen = {}

    def probe():
        io = async_plugin.AsyncCheckpointIO(TorchCheckpointIO())
        io._ensure_setup()
        seen["executor"] = type(io._executor)
        io.teardown()

    racecheck.explore(probe, schedules=1)
    assert seen["executor"].__module__.startswith("racecheck.sync")
    racecheck.explore(probe, schedules=1, exclude=[MODULE])
    assert seen["executor"].__module__ == "concurrent.futures.thread"
    racecheck.explore(probe, schedules=1, exclude=["lightning.*"])
    assert seen["executor"].__module__ == "concurrent.futures.thread"
    result = racecheck.explore(save_save_remove_teardown, strategy="pct", schedules=200)
    assert not result.ok and "leaked checkpoint" in result.failure.message
    again = racecheck.replay(save_save_remove_teardown, result.failure.token)
    assert again.failure.trace == result.failure.trace
