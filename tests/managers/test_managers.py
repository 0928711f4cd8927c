"""Checkpoint managers in the catalogue: every naive manager (one per public 2026 report) is found by pct with
default options and its token replays in a fresh process; the fixed manager over DCP's async_save stays clean;
a manager is a target of its own kind (docs/checkpoint-managers.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("torch")
# DCP warns on its own executor thread that it saves in one process, as meant here
pytestmark = pytest.mark.filterwarnings("ignore:torch.distributed is disabled:UserWarning")

import racecheck  # noqa: E402
from racecheck import scenarios  # noqa: E402
from racecheck.scenarios.managers import small_config  # noqa: E402

NAIVE = {
    "MegatronStyleManager": "names a checkpoint that is not complete",
    "MegatronScanManager": "",  # the tracker's checkpoint deleted, or the in-flight one's write failing under it
    "SkyRLStyleManager": "names a checkpoint that is not complete",
    "KempnerStyleManager": "names a checkpoint that is not complete",
}
FIXED = scenarios.MANAGER_TARGET


def _prepared(name, spec, fs="posix", scenario=None):
    return (scenario or scenarios.get(name)).build(scenarios.load_target(spec), fs)


@pytest.fixture(scope="module")
def found():
    """Each naive manager explored once with pct and racecheck's default options (shared by the tests below)."""
    out = {}
    for manager in NAIVE:
        spec = f"racecheck.scenarios.naive_managers:{manager}"
        prepared = _prepared("manager-retention", spec)
        out[manager] = (spec, racecheck.explore(prepared.fn, strategy="pct", **prepared.explore_kwargs))
    return out


@pytest.mark.parametrize("manager", list(NAIVE))
def test_each_naive_manager_is_found_by_pct_with_default_options(found, manager):
    _spec, result = found[manager]
    assert not result.ok, f"{manager}: pct found nothing in {result.schedules} schedules"
    assert NAIVE[manager] in result.failure.message
    assert result.failure.token in str(result.failure)


@pytest.fixture(scope="module")
def replayed(found):
    """Every naive manager's token replayed in one fresh process: manager -> [message, trace], None (passed) or
    the divergence's text."""
    cases = [(spec, "manager-retention", "posix", result.failure.token) for spec, result in found.values()]
    here = os.path.dirname(__file__)
    out = subprocess.run([sys.executable, os.path.join(here, "replay_tokens.py")], input=json.dumps(cases),
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = [json.loads(line) for line in out.stdout.splitlines() if line.startswith(("[", "null", '"'))]
    assert len(lines) == len(cases), out.stderr[-2000:]
    return dict(zip(found, lines, strict=True))


@pytest.mark.parametrize("manager", list(NAIVE))
def test_the_token_replays_the_same_failure_in_a_fresh_process(found, replayed, manager):
    spec, result = found[manager]
    again = replayed[manager]
    assert again is not None, f"{spec}: the token passed in a fresh process"
    assert not isinstance(again, str), again
    assert again == [result.failure.message, result.failure.trace], spec


@pytest.mark.parametrize(("name", "fs"), [("manager-retention", "posix"), ("manager-retention", "windows"),
                                          ("manager-crash", "posix")])
def test_fixed_manager_is_clean_under_pct(name, fs):
    prepared = _prepared(name, FIXED, fs)
    result = racecheck.explore(prepared.fn, strategy="pct", schedules=6, seed=1, **prepared.explore_kwargs)
    assert result.ok, result.failure


def test_manager_crash_catches_the_fixed_manager_without_its_fsyncs():
    """The right order without durability: a power loss after the tracker's rename keeps the name, not the data."""
    prepared = _prepared("manager-crash", "thread_writer_manager:NotDurableManager")
    result = racecheck.explore(prepared.fn, strategy="pct", schedules=40, seed=0, shrink_budget=10,
                               **prepared.explore_kwargs)
    assert not result.ok and "after a power loss" in result.failure.message


def test_a_manager_is_a_target_of_its_own_kind():
    target = scenarios.load_target(FIXED)
    assert target.kind == "manager" and "racecheck.fixed_impl.checkpoint_manager" in target.instrument
    with pytest.raises(scenarios.ScenarioError, match="runs a CheckpointIO; target .* is a checkpoint manager"):
        scenarios.get("delete-while-queued").build(target, "posix")
    with pytest.raises(scenarios.ScenarioError, match="runs a checkpoint manager; target .* is a CheckpointIO"):
        scenarios.get("manager-retention").build(scenarios.load_target(scenarios.FIXED_TARGET), "posix")
    with pytest.raises(scenarios.ScenarioError, match="does not run under 'real'"):
        scenarios.get("manager-crash").build(target, "real")
    with pytest.raises(scenarios.ScenarioError, match="nor a checkpoint manager"):
        scenarios.load_target("racecheck.scenarios.manager_storage:ShardWriter")


def test_the_cli_lists_manager_scenarios_and_runs_only_those_on_a_manager():
    from click.testing import CliRunner
    from racecheck.frontends.cli import main

    listed = CliRunner().invoke(main, ["list"]).output
    assert "manager-retention" in listed and "takes: manager" in listed
    ran = CliRunner().invoke(main, ["run", "--target", FIXED, "--fs", "real"])
    assert "manager-retention: skipped" in ran.output and "manager-crash: skipped" in ran.output
    assert "delete-while-queued" not in ran.output


@pytest.mark.slow
@pytest.mark.timeout(4 * 3600)
@pytest.mark.parametrize("fs", ["posix", "windows"])
@pytest.mark.parametrize("name", ["manager-retention", "manager-crash"])
def test_fixed_manager_long_pct(name, fs):
    budget = int(os.environ.get("RACECHECK_SLOW_SCHEDULES", "500"))
    prepared = _prepared(name, FIXED, fs)
    result = racecheck.explore(prepared.fn, strategy="pct", schedules=budget, seed=2, **prepared.explore_kwargs)
    assert result.ok, result.failure
    print(f"{name} [{fs}] fixed manager: pct {result.schedules} schedules, no failure")


THREAD_WRITER = "thread_writer_manager:ThreadWriterDurableManager"  # tests/managers is on sys.path


def _small(spec, strategy, watcher_checks=0, **kwargs):
    scenario = small_config(scenarios.get("manager-retention"), steps=(1, 2), watcher_checks=watcher_checks)
    prepared = _prepared("manager-retention", spec, scenario=scenario)
    return racecheck.explore(prepared.fn, strategy=strategy, **{**prepared.explore_kwargs, "memory": False,
                                                                **kwargs})


def test_dpor_proves_the_fixed_managers_protocol_on_a_small_config():
    """Two saves, keep_last_n=1, checks after every call and at the end, synchronisation and files: dpor exhausts
    the fixed protocol (over one writer thread: see thread_writer_manager.py) and finds the Megatron-style one."""
    proved = _small(THREAD_WRITER, "dpor", schedules=2000)
    assert proved.ok and proved.exhausted, proved.failure
    caught = _small("racecheck.scenarios.naive_managers:MegatronStyleManager", "dpor", schedules=2000,
                    shrink_budget=0)
    assert not caught.ok


@pytest.mark.slow
@pytest.mark.timeout(4 * 3600)
def test_dfs_exhausts_the_fixed_managers_protocol_with_the_watcher_at_bound_2():
    result = _small(THREAD_WRITER, "dfs", watcher_checks=1, schedules=10**5, preemption_bound=2)
    assert result.ok and result.exhausted, result.failure
    print(f"dfs bound 2, watcher: {result.schedules} schedules, exhausted")


def test_fixed_manager_plain_run_keeps_the_last_n_and_resumes_the_last(tmp_path):
    from racecheck.fixed_impl import DurableCheckpointManager
    from racecheck.scenarios.manager_contract import consistent_step, state

    manager = DurableCheckpointManager(str(tmp_path), keep_last_n=2)
    for step in (1, 2, 3):
        manager.save(step, state(step))
    manager.close()
    assert sorted(os.listdir(tmp_path)) == ["latest", "step_000002", "step_000003"]
    assert consistent_step(DurableCheckpointManager(str(tmp_path)).resume()) == 3


def test_fixed_manager_a_failed_save_commits_and_deletes_nothing(tmp_path):
    from concurrent.futures import Future

    from racecheck.fixed_impl import DurableCheckpointManager
    from racecheck.scenarios.manager_contract import consistent_step, state

    class Failing(DurableCheckpointManager):
        def start_save(self, saved, path):
            if saved["step"] == 1:
                return super().start_save(saved, path)
            future: Future = Future()
            future.set_exception(OSError("disk full"))
            return future

    manager = Failing(str(tmp_path), keep_last_n=1)
    manager.save(1, state(1))
    manager.save(2, state(2))
    with pytest.raises(OSError, match="disk full"):
        manager.finalize()
    assert (tmp_path / "latest").read_text() == "step_000001" and (tmp_path / "step_000001" / ".metadata").exists()
    assert consistent_step(DurableCheckpointManager(str(tmp_path)).resume()) == 1


def test_fixed_manager_resume_skips_an_uncommitted_save_with_an_empty_metadata(tmp_path):
    """What pct found (manager-crash, seed 5, schedule #59): DCP fsyncs .metadata.tmp before its buffered pickle
    reaches the file, so a power loss after the rename leaves an empty .metadata in a save never committed."""
    from racecheck.fixed_impl import DurableCheckpointManager
    from racecheck.scenarios.manager_contract import consistent_step, state

    manager = DurableCheckpointManager(str(tmp_path))
    manager.save(1, state(1))
    manager.close()
    (tmp_path / "step_000002").mkdir()
    (tmp_path / "step_000002" / ".metadata").write_bytes(b"")
    assert consistent_step(DurableCheckpointManager(str(tmp_path)).resume()) == 1
    (tmp_path / "latest").unlink()
    assert consistent_step(DurableCheckpointManager(str(tmp_path)).resume()) == 1  # the newest that loads
