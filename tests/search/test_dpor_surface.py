"""strategy="dpor" everywhere a strategy goes, through the public surface: explore and replay (tokens, shrinking,
max_failures), the Config's per-strategy default bound, the exhaustion note, and its place in the registry (no
duplicate steering, one unit under --jobs). The CLI and the pytest plugin have theirs in tests/cli and
tests/plugin (test_cli_dpor.py, test_plugin_dpor.py)."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import racecheck
from racecheck import Config
from racecheck.search import registry
from racecheck.search.coverage import Coverage

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "engine"))
import classic_bugs  # noqa: E402
import dpor_programs  # noqa: E402


def test_dpor_finds_the_lost_update_shrinks_it_and_its_token_replays():
    result = racecheck.explore(classic_bugs.lost_update, strategy="dpor")
    assert not result.ok
    failure = result.failure
    assert failure.token.startswith("rc1.dpor.0.")
    assert failure.preemptions == 1  # shrunk to what the bug needs, as every strategy's failures are
    assert failure.race is not None and failure.race.resource == "dict#1['count']"  # the counter, memory watched
    again = racecheck.replay(classic_bugs.lost_update, failure.token)
    assert again.failure is not None and again.failure.trace == failure.trace


def test_dpor_proves_the_fix_and_says_how_many_classes():
    result = racecheck.explore(classic_bugs.lost_update_fixed, strategy="dpor")
    assert result.ok and result.exhausted
    # which thread takes the lock first, and where the bare point inside it (which conflicts with every step of
    # the other thread) falls among the other thread's steps before its acquire and the main thread's start/join
    assert result.interleavings == 21
    note = "exhausted: all 21 classes of equivalent interleavings explored"
    assert result.exhausted_note == note and note in result.summary()
    bounded = racecheck.explore(classic_bugs.lost_update_fixed, strategy="dpor", preemption_bound=1)
    assert not bounded.exhausted and bounded.exhausted_note == ""  # a bound cut reversals: no proof
    assert "not exhausted: the preemption bound left" in bounded.summary()


def test_the_bound_defaults_per_strategy():
    assert Config().preemption_bound == "default"
    assert Config(strategy="dpor").bound is None
    assert Config(strategy="dfs").bound == 2
    assert Config(strategy="pct").bound == 2
    assert Config(strategy="dpor", preemption_bound=1).bound == 1
    assert Config(strategy="dfs", preemption_bound=None).bound is None
    assert Config(strategy="dfs", preemption_bound=math.inf).bound is None


def test_a_bound_bounds_dpor():
    free = racecheck.explore(classic_bugs.futures_order_fixed, strategy="dpor", schedules=10_000)
    bounded = racecheck.explore(classic_bugs.futures_order_fixed, strategy="dpor", preemption_bound=0)
    assert free.exhausted and bounded.schedules < free.schedules
    # the bound cut reversals, so the bounded search ends without claiming a proof (its schedules are not all)
    assert not bounded.exhausted and bounded.no_proof.startswith("not exhausted")


def test_max_failures_lists_every_distinct_failure_dfs_lists():
    # A deadlock when the third thread takes the only item first, and the oracle's assertion in other orders.
    fn = dpor_programs.make_test((("get",), ("put",), ("get_nowait", "rw_a")))
    found = {}
    for strategy in ("dfs", "dpor"):
        result = racecheck.explore(fn, strategy=strategy, preemption_bound=None, schedules=20_000,
                                   max_failures=10, shrink_budget=0, memory=False)
        assert result.exhausted
        found[strategy] = sorted((f.kind, type(f.exception).__name__) for f in result.failures)
    assert found["dpor"] == found["dfs"] and len(found["dpor"]) >= 2


def test_the_registry_says_dpor_is_systematic_with_no_bound():
    entry = registry.entry("dpor")
    assert entry.systematic and registry.is_systematic("dpor") and registry.is_systematic("dfs")
    assert not any(registry.is_systematic(name) for name in ("random", "pct", "pos", "replay"))
    assert registry.default_of("dpor", "preemption_bound", 2) is None
    assert "dpor" in registry.STRATEGY_NAMES
    assert Coverage(Config(strategy="dpor").parts().search).tree is None  # no duplicate steering: it never repeats
    assert Coverage(Config(strategy="pct").parts().search).tree is not None


def test_same_exploration_same_schedules():
    runs = [racecheck.explore(classic_bugs.futures_order_violation, strategy="dpor", max_failures=5,
                              shrink_budget=0) for _ in range(2)]
    assert [(f.token, f.schedule_index) for f in runs[0].failures] == [
        (f.token, f.schedule_index) for f in runs[1].failures]
    assert runs[0].schedules == runs[1].schedules
