"""Oracles read checkpoints through the target: a checkpoint IO over ``torch.distributed.checkpoint.async_save``
(checkpoints are directories) is judged by its own ``load_checkpoint``. The fire-and-forget version races, the
waiting version passes the call-sequence scenarios; every scenario says which reader it uses; a target Lightning
refuses outright fails under every schedule and is reported as not a race.
"""

from __future__ import annotations

import functools

import pytest

pytest.importorskip("lightning")
pytest.importorskip("torch.distributed.checkpoint")

import racecheck  # noqa: E402
from racecheck import scenarios  # noqa: E402

# The fixed IO's behaviour is the subject here, over the readers' call sequences and a Trainer.fit: explored
# with memory=False, the proof over synchronisation and files (memory watching's proofs of the IO are in
# tests/scenarios/test_dpor_reach.py).
explore_without_memory = functools.partial(racecheck.explore, memory=False)
run_without_memory = functools.partial(scenarios.run, memory=False)

# The scenarios where only the order of the calls is at stake: a waiting IO must pass them whatever its format.
ORDERING = ["delete-while-queued", "delete-while-writing", "overwrite-same-path", "load-while-pending",
            "teardown-flush", "error-propagation", "snapshot-isolation", "workload"]


def test_every_scenario_names_its_reader_in_its_docstring():
    for name, scenario in scenarios.CATALOGUE.items():
        assert scenario.reader in scenarios.READERS, name
        assert f"Reader: {scenario.reader}." in scenario.workload.__doc__, name
    assert scenarios.get("delete-while-writing").reader == "names"
    assert scenarios.get("delete-while-queued").reader == "target"


def test_a_workload_without_a_reader_paragraph_is_refused():
    from racecheck.scenarios.core import define

    def workload(ctx):
        """An oracle sentence, but no reader."""

    with pytest.raises(ValueError, match="Reader: <target|names>"):
        define("no-reader", workload)


@pytest.mark.parametrize("fs", ["posix", "windows"])
@pytest.mark.parametrize("name", ORDERING)
def test_the_waiting_dcp_io_passes_the_call_sequence_scenarios(name, fs):
    for strategy in ("random", "pct"):
        result = run_without_memory(name, target=scenarios.DCP_WAITING_TARGET, fs=fs, strategy=strategy, schedules=8,
                               seed=0)
        assert result.ok, str(result.failure)


def test_the_fire_and_forget_dcp_io_leaks_and_the_token_replays():
    target = scenarios.load_target(scenarios.DCP_TARGET)
    prepared = scenarios.get("delete-while-queued").build(target, "posix")
    kwargs = {**prepared.explore_kwargs, "memory": False}
    result = racecheck.explore(prepared.fn, strategy="random", schedules=30, seed=0, max_failures=5, **kwargs)
    leaks = [f for f in result.failures if f.message.startswith("AssertionError: leaked checkpoint(s) ['a.ckpt']")]
    assert leaks, [f.message for f in result.failures]
    assert all(f.depends_on_schedule for f in result.failures)
    again = racecheck.replay(prepared.fn, leaks[0].token, **kwargs)
    assert again.failure.trace == leaks[0].trace


def test_the_fire_and_forget_dcp_io_removing_under_a_pending_save_fails_on_windows():
    result = run_without_memory("delete-while-writing", target=scenarios.DCP_TARGET, fs="windows", strategy="random",
                           schedules=30, seed=0, max_failures=5)
    messages = [f.message for f in result.failures]
    assert any("WinError 32" in m for m in messages), messages


def test_a_target_lightning_refuses_is_not_a_race():
    result = run_without_memory("trainer-fit-top1-steps", target="scenario_targets:DuckTypedIO", fs="posix",
                           strategy="pct", schedules=20, seed=0)
    assert not result.ok
    assert "Found invalid type for plugin" in result.failure.message
    assert result.failure.depends_on_schedule is False and result.failure.not_a_race
    assert "fails under every schedule tried: not a race" in str(result.failure)
