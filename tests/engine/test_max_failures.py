"""All distinct bugs, not only the first: ``max_failures`` keeps exploring, ``result.failures`` groups by signature.

The measured need comes from Lightning's own pattern (delete-while-writing on stock Lightning): the leak needs no
preemption, so it is what every strategy finds first, and it hides the FileNotFoundError from fsspec's commit,
which needs two. With ``max_failures=2`` one run reports both, each shrunk, each with a token that replays it.
"""

import functools
import threading

import pytest
import racecheck
from racecheck import scenarios

# The subject here is grouping of distinct failures over the marked points, not memory:
# explored with memory=False (memory watching adds a warm-up run and steps of its own).
_explore = functools.partial(racecheck.explore, memory=False)


def two_bugs():
    """Two independent races: a check-then-act on ``ready`` (ValueError) and a lost update (AssertionError)."""
    state = {"ready": False, "value": None, "count": 0}

    def producer():
        state["ready"] = True
        racecheck.point("published flag before value")
        state["value"] = 42

    def consumer():
        if state["ready"] and state["value"] is None:
            raise ValueError("saw the flag before the value")

    def increment():
        seen = state["count"]
        racecheck.point("between read and write")
        state["count"] = seen + 1

    threads = [threading.Thread(target=t) for t in (producer, consumer, increment, increment)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert state["count"] == 2, f"lost update: {state['count']}"


def test_default_stops_at_the_first_failure_and_lists_it():
    result = _explore(two_bugs, strategy="dfs", schedules=10_000, preemption_bound=2)
    assert not result.ok
    assert result.failures == [result.failure]


@pytest.mark.parametrize("strategy", ["dfs", "pct", "random"])
def test_both_bugs_reported_each_shrunk_with_its_own_token(strategy):
    result = _explore(two_bugs, strategy=strategy, schedules=2000 if strategy == "dfs" else 400, seed=0,
                                max_failures=5, preemption_bound=1)
    kinds = sorted(type(f.exception).__name__ for f in result.failures)
    assert kinds == ["AssertionError", "ValueError"], [f.message for f in result.failures]
    assert result.failure is result.failures[0]
    signatures = [f.signature for f in result.failures]
    assert len(set(signatures)) == len(signatures)
    for failure in result.failures:
        again = racecheck.replay(two_bugs, failure.token)
        assert type(again.failure.exception) is type(failure.exception)
        assert again.failure.trace == failure.trace
        assert failure.preemptions <= failure.original_preemptions
        assert failure.occurrences >= 1
    assert sum(f.occurrences for f in result.failures) >= len(result.failures)
    if strategy == "dfs":
        assert result.exhausted  # the whole bounded space was explored: there is no third bug within it


def test_stops_once_max_failures_distinct_bugs_are_found():
    result = _explore(two_bugs, strategy="dfs", schedules=10_000, max_failures=2)
    assert len(result.failures) == 2
    assert not result.exhausted


def test_a_passing_exploration_has_no_failures():
    def fine():
        pass

    result = _explore(fine, schedules=5, max_failures=3)
    assert result.ok and result.failures == []


@pytest.mark.parametrize("value", [0, -1, 1.5, "2"])
def test_bad_max_failures_is_a_clear_error(value):
    with pytest.raises((TypeError, ValueError), match="max_failures"):
        _explore(two_bugs, max_failures=value)


def test_lightning_leak_does_not_hide_the_fsspec_commit_race():
    pytest.importorskip("lightning")
    # memory=False: the fsspec commit race needs two preemptions, which pct places among the file and sync points in
    # 100 schedules; among every memory access of fsspec and Lightning as well it needs more schedules than that.
    first_only = scenarios.run("delete-while-writing", fs="posix", strategy="pct", schedules=100, seed=0,
                               memory=False)
    assert [type(f.exception).__name__ for f in first_only.failures] == ["AssertionError"]
    assert first_only.failure.preemptions == 0 and "leaked checkpoint" in first_only.failure.message

    result = scenarios.run("delete-while-writing", fs="posix", strategy="pct", schedules=100, seed=0, max_failures=2,
                           memory=False)
    leak, missing = result.failures
    assert "leaked checkpoint" in leak.message and leak.preemptions == 0
    assert isinstance(missing.exception, FileNotFoundError) and missing.preemptions == 2
    assert "a.ckpt" in str(missing.exception)
    assert missing.race is not None and missing.race.resource.endswith("/a.ckpt")
    assert "fs.remove" in missing.race.first.op and missing.race.first.tid == 0  # the training thread's delete
    assert missing.race.second.tid != 0  # ... raced with the writer's commit

    scenario = scenarios.get("delete-while-writing")
    prepared = scenario.build(scenarios.load_target(scenarios.STOCK_TARGET), "posix")
    for failure in (leak, missing):
        again = racecheck.replay(prepared.fn, failure.token, **prepared.explore_kwargs)
        assert again.failure.trace == failure.trace
