"""Generated workloads: hypothesis generates (and shrinks) the call sequence, racecheck explores (and shrinks) the
schedule of each, and the sequential model of the store is the oracle."""

from __future__ import annotations

import pytest

pytest.importorskip("lightning")

import racecheck  # noqa: E402
from hypothesis import HealthCheck, find, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from racecheck import scenarios  # noqa: E402
from racecheck.scenarios.workload import DEFAULT, KINDS, PATHS, Op, describe, parse, scenario_for  # noqa: E402

ops_strategy = st.lists(
    st.one_of(st.builds(Op, st.sampled_from([k for k in KINDS if k != "teardown"]), st.sampled_from(PATHS)),
              st.just(Op("teardown"))),
    min_size=1, max_size=8,
)
QUIET = settings(database=None, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck))


def explore_ops(ops, target, strategy="random", schedules=8, **kwargs):
    prepared = scenario_for(ops).build(scenarios.load_target(target), "posix")
    return racecheck.explore(prepared.fn, strategy=strategy, schedules=schedules, seed=0,
                             **{**prepared.explore_kwargs, **kwargs}), prepared


def test_parse_and_describe_round_trip():
    assert parse(describe(DEFAULT)) == DEFAULT
    with pytest.raises(ValueError):
        parse("save")
    with pytest.raises(ValueError):
        parse("delete a")


@settings(QUIET, max_examples=8)
@given(ops=ops_strategy)
def test_fixed_io_matches_the_sequential_model_on_generated_workloads(ops):
    for strategy in ("random", "pct"):
        result, _ = explore_ops(ops, scenarios.FIXED_TARGET, strategy=strategy, schedules=6)
        assert result.ok, f"{describe(ops)}: {result.failure}"


def test_stock_io_minimal_failing_workload_is_found_and_replays():
    def fails(ops):  # the search for the smallest workload: its file operations race, memory watching not needed
        result, _ = explore_ops(ops, scenarios.STOCK_TARGET, schedules=10, shrink_budget=0, memory=False)
        return not result.ok

    minimal = find(ops_strategy, fails, settings=settings(QUIET, max_examples=60))
    assert len(minimal) == 2, describe(minimal)  # e.g. "save a; load a" or "save a; remove a"
    assert minimal[0].kind == "save"
    result, prepared = explore_ops(minimal, scenarios.STOCK_TARGET, strategy="pct", schedules=20)
    assert not result.ok
    again = racecheck.replay(prepared.fn, result.failure.token, **prepared.explore_kwargs)
    assert again.failure.trace == result.failure.trace


def test_a_token_belongs_to_its_workload():
    first, _ = explore_ops(parse("save a; remove a"), scenarios.STOCK_TARGET, shrink_budget=0)
    _, other = explore_ops(parse("save b; remove b"), scenarios.STOCK_TARGET, schedules=1)
    with pytest.raises(racecheck.TokenError):
        racecheck.replay(other.fn, first.failure.token, **other.explore_kwargs)
