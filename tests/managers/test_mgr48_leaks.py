"""The "no leaks" oracle of the manager scenarios: a manager whose close() leaves its executor's worker parked
fails, naming the thread; the fixed manager (over DCP's thread-based async_save, whose worker is shut down in a
done callback and ends after close() returns) passes."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore:torch.distributed is disabled:UserWarning")

import racecheck  # noqa: E402
from racecheck import scenarios  # noqa: E402
from racecheck.scenarios.managers import small_config  # noqa: E402


def _explore(spec, strategy="pct", **kwargs):
    scenario = small_config(scenarios.get("manager-retention"), steps=(1, 2), watcher_checks=0)
    prepared = scenario.build(scenarios.load_target(spec), "posix")
    return racecheck.explore(prepared.fn, strategy=strategy, **{**prepared.explore_kwargs, "memory": False,
                                                                **kwargs})


def test_a_manager_that_never_shuts_its_executor_down_leaks_a_thread():
    result = _explore("thread_writer_manager:LeakyWriterManager", schedules=3, seed=0, shrink_budget=0)
    assert not result.ok, "the leaked writer thread went unnoticed"
    message = result.failure.message
    assert "LeakedThread" in message and "is still running when the scenario ends" in message, message
    assert "ckpt-writer" in message, message  # named by the thread's own name


def test_the_same_manager_closing_its_writer_leaks_nothing():
    result = _explore("thread_writer_manager:ThreadWriterDurableManager", strategy="dpor", schedules=200)
    assert result.ok and result.exhausted, result.failure


def test_the_fixed_manager_over_dcp_leaks_nothing():
    result = _explore(scenarios.MANAGER_TARGET, schedules=3, seed=0)
    assert result.ok, result.failure
