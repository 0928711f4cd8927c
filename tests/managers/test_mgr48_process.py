"""The manager scenarios with DCP's process-based async_save as the saver (issue 48 item 2): the daemon is a
spawned process of the run, its pipe traffic and every file it writes are scheduling points. ``-m slow``: each
schedule spawns a daemon that imports torch (about 3 s a schedule here). Runs with ``memory=False`` (files,
synchronisation, pipes), ``watchdog=10`` (a spawned interpreter importing torch on a loaded machine)."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytestmark = [pytest.mark.slow, pytest.mark.timeout(3600),
              pytest.mark.filterwarnings("ignore:torch.distributed is disabled:UserWarning")]

import racecheck  # noqa: E402
from racecheck import scenarios  # noqa: E402

OPTIONS = {"memory": False, "watchdog": 10}


def _explore(spec, name="manager-retention", **kwargs):
    prepared = scenarios.get(name).build(scenarios.load_target(f"mgr48_process_managers:{spec}"), "posix")
    return racecheck.explore(prepared.fn, strategy="pct", **{**prepared.explore_kwargs, **OPTIONS, **kwargs})


@pytest.mark.parametrize("name", ["manager-retention", "manager-crash"])
def test_the_fixed_protocol_over_the_daemon_is_clean(name):
    result = _explore("ProcessDurableManager", name, schedules=4, seed=0)
    assert result.ok, result.failure


def test_the_kempnerforge_style_manager_over_the_daemon_is_found():
    result = _explore("ProcessKempnerManager", schedules=10, shrink_budget=0, race_budget=0)
    assert not result.ok and "names a checkpoint that is not complete" in result.failure.message, result.failure


def test_a_daemon_the_manager_never_stops_is_a_leaked_process():
    result = _explore("LeakyDaemonManager", schedules=2, shrink_budget=0, race_budget=0)
    assert not result.ok and "LeakedProcess" in result.failure.message, result.failure
    assert "a daemon) is still running when the test ends" in result.failure.message
