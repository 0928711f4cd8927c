"""racecheck.fixed_impl.LockedAsyncCheckpointIO passes every scenario under both fake-filesystem semantics.

The default suite runs a fast, deterministic version (a few hundred schedules in all); the ``slow`` test runs
>= 10,000 schedules per scenario (random + pct) and dfs to exhaustion at preemption bound 2 on the small ones,
and prints the counts.
"""

from __future__ import annotations

import functools
import math
import os

import pytest

pytest.importorskip("lightning")

from racecheck import scenarios  # noqa: E402

# The fixed IO's behaviour is the subject here, over every scenario (Trainer.fit ones included) against the
# fixed IO: explored with memory=False, the proof over synchronisation and files (memory watching's proofs of
# the IO are in tests/scenarios/test_dpor_reach.py).
run_without_memory = functools.partial(scenarios.run, memory=False)

FAST = {"trainer-fit": 1}  # a schedule of trainer-fit is 4 fits + 4 resumes: one per strategy and semantics
# the IO scenarios: those that take a checkpoint manager are proved in tests/managers/
IO_SCENARIOS = {n: s for n, s in scenarios.CATALOGUE.items() if s.takes == "io"}
CALL_SEQUENCE = [n for n in IO_SCENARIOS if not n.startswith("trainer-fit")]


# Strict xfails for scenarios that find a real bug in the fixed IO, with the reason. Empty now: after the fixed IO
# began delegating writes to the wrapped IO, durability="fsync" (then the default) failed crash-consistency,
# resume-last and windows-replace-open (windows); the default is now durability="atomic", which passes them
# (test_fixed_io_fsync_durability_is_caught_by_the_crash_scenarios keeps the scenarios' teeth on record).
KNOWN: dict[tuple[str, str], str] = {}
FAST_PASSES = {("crash-consistency", "windows")}  # its 24 fast schedules do not reach the failure


def _params(names, fs_list=("posix", "windows"), fast=True):
    out = []
    for name in names:
        for fs in fs_list:
            known = (name, fs) in KNOWN and not (fast and (name, fs) in FAST_PASSES)
            marks = [pytest.mark.xfail(strict=True, reason=KNOWN[(name, fs)])] if known else []
            out.append(pytest.param(name, fs, marks=marks, id=f"{name}-{fs}"))
    return out


def _check(name, fs, strategy, schedules, seed=0, **kwargs):
    result = run_without_memory(name, target=scenarios.FIXED_TARGET, fs=fs, strategy=strategy, schedules=schedules,
                           seed=seed, **kwargs)
    assert result.ok, str(result.failure)
    assert result.leaked_threads == []
    return result


@pytest.mark.parametrize(("name", "fs"), _params(CALL_SEQUENCE))
def test_fixed_io_passes(name, fs):
    for strategy in ("pct", "random"):
        result = _check(name, fs, strategy, FAST.get(name, 12))
        assert result.schedules == FAST.get(name, 12)


@pytest.mark.parametrize("fs", ["posix", "windows"])
def test_fixed_io_passes_trainer_fit_silently(fs, capfd):
    _check("trainer-fit", fs, "random", 1)
    out, err = capfd.readouterr()
    for noise in ("GPU available", "TPU available", "Tip:", "max_epochs=", "LOCAL_RANK", "Not removing"):
        assert noise not in out + err, f"Lightning's console output leaked out of the scenario: {noise!r}"


def test_trainer_fit_on_the_real_disk():
    """On the real disk file operations are not scheduling points (a whole write is one step), which is why the
    scenarios default to the fake filesystem; the real disk still runs a real fit and its oracle."""
    _check("trainer-fit-top2-epochs", "real", "random", 1)


@pytest.mark.parametrize(("name", "fs", "strategy"), [("crash-consistency", "posix", "pct"),
                                                      ("resume-last", "windows", "pct"),
                                                      ("windows-replace-open", "windows", "pct")])
def test_fixed_io_fsync_durability_is_caught_by_the_crash_scenarios(name, fs, strategy):
    """durability="fsync" fsyncs after the wrapped IO's temp-file move: a crash right after the move leaves a torn
    final file; on Windows the move copies over an open target. The scenarios catch both."""
    result = run_without_memory(name, target="scenario_targets:locked_fsync", fs=fs, strategy=strategy, schedules=20,
                           seed=0, shrink_budget=0)
    assert not result.ok and result.failure.message.startswith("Incomplete: ")


def test_fixed_io_passes_on_the_real_disk():
    for name in ("delete-while-queued", "delete-while-writing", "teardown-flush", "error-propagation"):
        _check(name, "real", "random", 10)


SLOW_SCHEDULES = int(os.environ.get("RACECHECK_SLOW_SCHEDULES", "10000"))
# A Trainer.fit schedule runs a whole fit and a resume per configuration, far more work than a call-sequence
# schedule, so the slow run gives each trainer-fit configuration a smaller budget than the other scenarios.
SLOW_FIT_SCHEDULES = int(os.environ.get("RACECHECK_SLOW_FIT_SCHEDULES", "200"))


@pytest.mark.slow
@pytest.mark.timeout(4 * 3600)  # thousands of schedules of one strategy: well past the default timeout
@pytest.mark.parametrize("strategy", ["random", "pct"])
@pytest.mark.parametrize(("name", "fs"), _params([n for n in IO_SCENARIOS if n != "trainer-fit"], fast=False))
def test_fixed_io_long_exploration(name, fs, strategy):
    """Half the budget per strategy: random + pct together make >= 10,000 schedules per scenario and semantics."""
    budget = (SLOW_FIT_SCHEDULES if name.startswith("trainer-fit") else SLOW_SCHEDULES) // 2
    result = _check(name, fs, strategy, budget, seed=1)
    # the whole budget, unless the space is smaller: then every distinct schedule ran once (skip_duplicates)
    assert result.schedules == budget or (result.exhausted and result.schedules == result.distinct < budget)
    print(f"{name} [{fs}] fixed IO: {strategy} {result.schedules} schedules, no failure")


@pytest.mark.slow
@pytest.mark.timeout(4 * 3600)
@pytest.mark.parametrize(("name", "fs"), _params([n for n, s in IO_SCENARIOS.items() if s.small], fast=False))
def test_fixed_io_dfs_exhausts_the_small_scenarios(name, fs):
    result = _check(name, fs, "dfs", 10**6, preemption_bound=2)
    assert result.exhausted, f"dfs did not exhaust {name} within 10^6 schedules"
    print(f"{name} [{fs}] fixed IO: dfs bound 2 exhausted after {result.schedules} schedules, no failure")


@pytest.mark.slow
@pytest.mark.timeout(4 * 3600)
@pytest.mark.parametrize("name", [n for n, s in IO_SCENARIOS.items() if s.small])
def test_small_scenarios_are_dfs_exhaustible_with_no_bound_on_posix(name):
    result = _check(name, "posix", "dfs", 10**5, preemption_bound=math.inf)
    print(f"{name} [posix] fixed IO: dfs unbounded {'exhausted' if result.exhausted else 'not exhausted'} "
          f"after {result.schedules} schedules")
