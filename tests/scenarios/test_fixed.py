"""racecheck.fixed_impl.LockedAsyncCheckpointIO passes every scenario under both fake-filesystem semantics.

The default suite runs a fast, deterministic version (a few hundred schedules in all); the ``slow`` test runs
>= 10,000 schedules per scenario (random + pct) and dfs to exhaustion at preemption bound 2 on the small ones,
and prints the counts.
"""

from __future__ import annotations

import math
import os

import pytest

pytest.importorskip("lightning")

from racecheck import scenarios  # noqa: E402

FAST = {"trainer-fit": 1}  # a schedule of trainer-fit is 4 fits + 4 resumes (~3 s): one per strategy and semantics
CALL_SEQUENCE = [n for n in scenarios.CATALOGUE if not n.startswith("trainer-fit")]


def _check(name, fs, strategy, schedules, seed=0, **kwargs):
    result = scenarios.run(name, target=scenarios.FIXED_TARGET, fs=fs, strategy=strategy, schedules=schedules,
                           seed=seed, **kwargs)
    assert result.ok, str(result.failure)
    assert result.leaked_threads == []
    return result


@pytest.mark.parametrize("fs", ["posix", "windows"])
@pytest.mark.parametrize("name", CALL_SEQUENCE)
def test_fixed_io_passes(name, fs):
    for strategy in ("pct", "random"):
        result = _check(name, fs, strategy, FAST.get(name, 12))
        assert result.schedules == FAST.get(name, 12)


@pytest.mark.parametrize("fs", ["posix", "windows"])
def test_fixed_io_passes_trainer_fit(fs):
    _check("trainer-fit", fs, "random", 1)


def test_fixed_io_passes_on_the_real_disk():
    for name in ("delete-while-queued", "delete-while-writing", "teardown-flush", "error-propagation"):
        _check(name, "real", "random", 10)


SLOW_SCHEDULES = int(os.environ.get("RACECHECK_SLOW_SCHEDULES", "10000"))
# A Trainer.fit schedule costs ~0.8 s per configuration (fit + resume): 10,000 of them would take over two hours
# per configuration on two cores, so the slow run gives each trainer-fit configuration a smaller budget.
SLOW_FIT_SCHEDULES = int(os.environ.get("RACECHECK_SLOW_FIT_SCHEDULES", "200"))


@pytest.mark.slow
@pytest.mark.parametrize("fs", ["posix", "windows"])
@pytest.mark.parametrize("name", [n for n in scenarios.CATALOGUE if n != "trainer-fit"])
def test_fixed_io_long_exploration(name, fs):
    budget = SLOW_FIT_SCHEDULES if name.startswith("trainer-fit") else SLOW_SCHEDULES
    counts = {}
    for strategy in ("random", "pct"):
        counts[strategy] = _check(name, fs, strategy, budget // 2, seed=1).schedules
    assert sum(counts.values()) >= budget - 1
    line = f"{name} [{fs}] fixed IO: random {counts['random']} + pct {counts['pct']} schedules, no failure"
    if scenarios.get(name).small:
        dfs = _check(name, fs, "dfs", 10**6, preemption_bound=2)
        assert dfs.exhausted, f"dfs did not exhaust {name} within 10^6 schedules"
        line += f"; dfs bound 2 exhausted after {dfs.schedules} schedules"
    print(line)


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n, s in scenarios.CATALOGUE.items() if s.small])
def test_small_scenarios_are_dfs_exhaustible_with_no_bound_on_posix(name):
    result = _check(name, "posix", "dfs", 10**5, preemption_bound=math.inf)
    print(f"{name} [posix] fixed IO: dfs unbounded {'exhausted' if result.exhausted else 'not exhausted'} "
          f"after {result.schedules} schedules")
