"""The racecheck.scenarios contract other components build on: catalogue, targets, build, run."""

from __future__ import annotations

import pytest

pytest.importorskip("lightning")

import racecheck  # noqa: E402
from racecheck import scenarios  # noqa: E402
from racecheck.scenarios import ScenarioError, load_target  # noqa: E402

REQUIRED = ["delete-while-queued", "delete-while-writing", "overwrite-same-path", "evict-before-commit",
            "load-while-pending", "teardown-flush", "error-propagation", "snapshot-isolation", "crash-consistency",
            "windows-replace-open", "trainer-fit", "resume-last", "workload"]


def test_catalogue_has_every_required_scenario_in_display_order():
    names = list(scenarios.CATALOGUE)
    assert [n for n in names if n in REQUIRED] == REQUIRED
    assert not any(n.endswith(("-windows", "-posix")) for n in names), "per-fs scenario names are gone"


@pytest.mark.parametrize("name", list(scenarios.CATALOGUE))
def test_every_scenario_states_its_oracle_and_semantics(name):
    scenario = scenarios.get(name)
    assert scenario.name == name
    assert scenario.oracle and "\n" not in scenario.oracle and scenario.oracle.endswith(".")
    assert set(scenario.semantics) <= {"posix", "windows", "real"} and scenario.semantics
    assert set(scenario.default_semantics) <= set(scenario.semantics)
    assert {"posix", "windows"} <= set(scenario.semantics), "every scenario runs under both fake semantics"
    if "real" not in scenario.semantics:
        assert scenario.why, "a scenario that cannot run on the real disk says why"
    assert isinstance(scenario.small, bool)


def test_unknown_scenario_is_one_line_naming_the_known_ones():
    with pytest.raises(ScenarioError) as info:
        scenarios.get("delete-while-queued-windows")
    message = str(info.value)
    assert "\n" not in message and "unknown scenario" in message and "delete-while-queued" in message


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        ("nocolon", "must look like"),
        ("a:b:c", "must look like"),
        (":Cls", "must look like"),
        ("no_such_module_xyz:Cls", "cannot import target module 'no_such_module_xyz'"),
        ("scenario_targets:Missing", "has no attribute 'Missing'"),
        ("scenario_targets:NotAnIO", "is not a CheckpointIO"),
        ("scenario_targets:not_an_io_factory", "returned int, not a CheckpointIO"),
        ("scenario_targets:failing_factory", "failed: RuntimeError: no storage configured"),
        ("scenario_targets:NOT_CALLABLE", "neither a CheckpointIO class nor a factory"),
    ],
)
def test_bad_targets_are_one_line_errors(spec, fragment):
    with pytest.raises(ScenarioError) as info:
        load_target(spec)
    assert fragment in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("spec", ["lightning.pytorch.plugins.io:AsyncCheckpointIO", scenarios.STOCK_TARGET,
                                  "scenario_targets:stock_factory"])
def test_both_stock_spellings_and_a_factory_reproduce_the_race(spec):
    target = load_target(spec)
    assert target.spec == spec
    assert "lightning.pytorch.plugins.io.async_plugin" in target.instrument
    result = scenarios.run("delete-while-queued", target=spec, fs="posix", strategy="random", schedules=20, seed=0,
                           shrink_budget=0)
    assert not result.ok and "leaked checkpoint" in result.failure.message


def test_factory_target_declared_and_extra_instrumentation():
    target = load_target("scenario_targets:locked_factory", extra_instrument=["csv"])
    assert target.io_class.__name__ == "LockedAsyncCheckpointIO"
    assert "racecheck.fixed_impl.locked_async" in target.instrument  # the class the factory returns
    assert "json" in target.instrument  # the module's __racecheck_instrument__
    assert target.instrument[-1] == "csv"  # --instrument MOD
    io = target.new_io()
    assert io.max_pending == 1 and io.checkpoint_io is not None
    assert scenarios.run("delete-while-queued", target="scenario_targets:locked_factory", fs="windows",
                         strategy="pct", schedules=30, seed=0).ok


def test_wrapping_class_gets_lightnings_torch_checkpoint_io():
    from lightning.fabric.plugins import TorchCheckpointIO

    io = load_target(scenarios.STOCK_TARGET).new_io()
    assert type(io.checkpoint_io) is TorchCheckpointIO


def test_build_gives_a_deterministic_test_function_and_replayable_kwargs():
    target = load_target(scenarios.STOCK_TARGET)
    prepared = scenarios.get("delete-while-queued").build(target, "windows")
    assert prepared.fs == "windows" and prepared.target is target
    assert prepared.fn.__module__ == "racecheck.scenarios.ordering"
    assert prepared.fn.__qualname__ == f"delete-while-queued[{scenarios.STOCK_TARGET}]"
    kwargs = prepared.explore_kwargs
    assert kwargs["fs"] == "windows" and kwargs["on_crash"] is None and kwargs["max_steps"] > 0
    assert "lightning.pytorch.plugins.io.async_plugin" in kwargs["instrument"]
    assert scenarios.get("delete-while-queued").build(target, "real").explore_kwargs["fs"] is None
    crashing = scenarios.get("crash-consistency").build(target, "posix").explore_kwargs
    assert crashing["fs"].crash and crashing["fs"].semantics == "posix" and callable(crashing["on_crash"])


def test_build_refuses_a_filesystem_the_scenario_does_not_run_under():
    target = load_target(scenarios.STOCK_TARGET)
    with pytest.raises(ScenarioError, match="power loss can only be simulated"):
        scenarios.get("evict-before-commit").build(target, "real")
    with pytest.raises(ScenarioError, match="does not run under 'ntfs'"):
        scenarios.get("delete-while-queued").build(target, "ntfs")


def test_run_on_the_real_disk_finds_the_race_and_cleans_up(tmp_path, monkeypatch):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    result = scenarios.run("delete-while-queued", fs="real", strategy="random", schedules=20, seed=0,
                           shrink_budget=0)
    assert not result.ok and "leaked checkpoint" in result.failure.message
    assert list(tmp_path.iterdir()) == [], "every schedule removes its temporary directory"
    assert isinstance(result, racecheck.Result)
