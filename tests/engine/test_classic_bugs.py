"""Each classic bug is found by random and by PCT within a stated budget, replays exactly, is shrunk to the fewest
preemptions it needs, and its fixed variant passes bounded exhaustive search (preemption bound 2)."""

import pytest
import racecheck
from classic_bugs import BUGS

BUDGET = 500  # schedules each strategy may spend finding a bug
REPLAYS = 100
NAMES = sorted(BUGS)


@pytest.mark.parametrize("strategy", ["random", "pct"])
@pytest.mark.parametrize("name", NAMES)
def test_bug_is_found_within_budget_and_shrunk(name, strategy):
    buggy, _, needed = BUGS[name]
    result = racecheck.explore(buggy, strategy=strategy, schedules=BUDGET, seed=0)
    assert not result.ok, f"{name}: {strategy} missed the bug in {BUDGET} schedules"
    failure = result.failure
    assert failure.preemptions == needed, failure
    assert failure.preemptions <= failure.original_preemptions
    assert failure.token.startswith(f"rc1.{strategy}.0.")


@pytest.mark.parametrize("name", NAMES)
def test_shrunk_preemptions_are_really_needed(name):
    """Exhaustive search one preemption below what the shrunk failure has finds nothing: it is the minimum."""
    buggy, _, needed = BUGS[name]
    if needed == 0:
        pytest.skip("fails without any preemption")
    result = racecheck.explore(buggy, strategy="dfs", schedules=100_000, preemption_bound=needed - 1)
    assert result.ok and result.exhausted


@pytest.mark.parametrize("name", NAMES)
def test_token_replays_identically(name):
    buggy, _, _ = BUGS[name]
    failure = racecheck.explore(buggy, strategy="pct", schedules=BUDGET, seed=3).failure
    assert failure is not None
    for _ in range(REPLAYS):
        again = racecheck.replay(buggy, failure.token)
        assert again.failure is not None
        assert again.failure.trace == failure.trace
        assert type(again.failure.exception) is type(failure.exception)
        assert again.failure.token == failure.token


@pytest.mark.parametrize("name", NAMES)
def test_fixed_variant_passes_bounded_exhaustive_search(name, record_property):
    _, fixed, _ = BUGS[name]
    result = racecheck.explore(fixed, strategy="dfs", schedules=100_000, preemption_bound=2)
    assert result.ok, result.failure
    assert result.exhausted, f"{name}: dfs did not finish the space in {result.schedules} schedules"
    record_property("dfs_schedules", result.schedules)
    print(f"{name}_fixed: dfs bound 2 exhausted after {result.schedules} schedules")
