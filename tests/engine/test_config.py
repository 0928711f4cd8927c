"""One Config for explore/replay: keyword shortcuts override it, unknown keywords are refused by name, one meaning
for preemption_bound=None, and replay() returns a declared type."""

import dataclasses
import math

import classic_bugs
import pytest
import racecheck
from racecheck import Config


def test_shortcuts_override_the_config():
    config = Config(strategy="dfs", schedules=7, preemption_bound=0)
    result = racecheck.explore(classic_bugs.lost_update_fixed, config, schedules=3)
    assert result.strategy == "dfs" and result.schedules <= 3
    assert result.config == dataclasses.replace(config, schedules=3)
    assert config.schedules == 7  # the caller's config is not modified


def test_every_documented_keyword_is_a_field():
    names = {f.name for f in dataclasses.fields(Config)}
    assert names == {
        "strategy", "schedules", "seed", "instrument", "preemption_bound", "depth", "fs", "on_crash", "max_steps",
        "watchdog", "shrink_budget", "check_determinism",
        "max_failures", "race_budget", "database", "skip_duplicates", "preempt", "progress",  # issue 10
        "one_cpu", "fresh_threads",  # issue 9: where the threads run, never what they do
        "locations",  # issue 9: source lines of every schedule, or only of those reported
        "exclude",  # issue 29: modules control by default leaves real
        "memory",  # issue 36: shared plain memory recorded, each access a scheduling point
        "sample_memory",  # issue 36: sampling strategies watch whole only in learning runs
        "data_races", "benign",  # issue 37: unordered conflicting accesses reported, failing or ignored
        "files",  # issue 37: real-disk file operations, each a scheduling point
        "atomic_races",  # issue 49: pairs of atomic additions (list.append, set.add) reported as data races too
    }


@pytest.mark.parametrize("call", [racecheck.explore, lambda fn, **kw: racecheck.replay(fn, "rc1.x", **kw)])
def test_unknown_keyword_is_a_type_error_naming_it(call):
    with pytest.raises(TypeError, match="unexpected keyword argument 'schedulez'"):
        call(classic_bugs.lost_update, schedulez=5)


def test_positional_options_are_refused_clearly():
    with pytest.raises(TypeError, match="racecheck.Config"):
        racecheck.explore(classic_bugs.lost_update, "pct")


@pytest.mark.parametrize(
    "bad, error",
    [
        ({"strategy": "bfs"}, ValueError),
        ({"schedules": 0}, ValueError),
        ({"depth": 0}, ValueError),
        ({"preemption_bound": -1}, ValueError),
        ({"preemption_bound": 1.5}, TypeError),
        ({"watchdog": 0}, ValueError),
        ({"max_steps": "10"}, TypeError),
        ({"on_crash": 3}, TypeError),
    ],
)
def test_bad_values_are_refused(bad, error):
    with pytest.raises(error):
        Config(**bad)


def test_instrument_accepts_one_name_or_many():
    assert Config(instrument="a.b").instrument == ("a.b",)
    assert Config(instrument=["a", "b"]).instrument == ("a", "b")


def test_preemption_bound_none_means_unbounded_everywhere():
    assert Config().bound == 2
    assert Config(preemption_bound=None).bound is None
    assert Config(preemption_bound=math.inf).bound is None
    counts = {}
    for bound in (0, 1, 2, None, math.inf):
        result = racecheck.explore(
            classic_bugs.lost_update_fixed, strategy="dfs", schedules=100_000, preemption_bound=bound
        )
        assert result.ok and result.exhausted
        counts[bound] = result.schedules
    assert counts[0] < counts[1] < counts[2] <= counts[None] == counts[math.inf]


def test_replay_returns_a_declared_result_with_its_trace():
    failure = racecheck.explore(classic_bugs.lost_update, strategy="random", schedules=100).failure
    again = racecheck.replay(classic_bugs.lost_update, failure.token)
    assert isinstance(again, racecheck.Result)
    assert "trace" in {f.name for f in dataclasses.fields(racecheck.Result)}
    assert again.trace == failure.trace == again.failure.trace


def test_a_config_is_reusable_for_replay():
    config = Config(strategy="random", schedules=100, seed=4)
    failure = racecheck.explore(classic_bugs.check_then_act, config).failure
    assert racecheck.replay(classic_bugs.check_then_act, failure.token, config).trace == failure.trace


def test_every_config_field_reaches_exactly_the_layers_that_read_it():
    """``Config.parts()`` splits a Config by layer: every field lands in a part (``preemption_bound`` as the
    resolved ``bound``), with its value, and nothing below the api layer needs the Config itself."""
    import dataclasses

    config = racecheck.Config(strategy="dfs", schedules=7, seed=3, preemption_bound=1, exclude=("json",),
                              memory=False, fs="posix", max_steps=99, data_races="fail", benign=("x.py:1",))
    parts = config.parts()
    placed = {}
    for part in parts:
        for field in dataclasses.fields(part):
            placed.setdefault(field.name, []).append(getattr(part, field.name))
    for field in dataclasses.fields(racecheck.Config):
        name = "bound" if field.name == "preemption_bound" else field.name
        assert name in placed, f"Config.{field.name} reaches no layer"
        expected = config.bound if name == "bound" else getattr(config, field.name)
        assert all(value == expected for value in placed[name]), field.name
    assert set(placed) - {f.name for f in dataclasses.fields(racecheck.Config)} == {"bound", "epoch"}
