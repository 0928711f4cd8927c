"""The racing pair of stock Lightning's leak (save(a); save(b); remove(a); teardown(), posix): the caller's lookup
of a.ckpt and the worker's rename onto it, with memory watched or not, in explore, in a replay of its token and
on the command line."""

from __future__ import annotations

import pytest

pytest.importorskip("lightning")

import racecheck  # noqa: E402
from racecheck import scenarios  # noqa: E402


def _leak(**kwargs):
    prepared = scenarios.get("delete-while-queued").build(scenarios.load_target(scenarios.STOCK_TARGET), "posix")
    options = {**prepared.explore_kwargs, **kwargs}
    result = racecheck.explore(prepared.fn, strategy="pct", schedules=20, seed=0, **options)
    assert "leaked checkpoint(s) ['a.ckpt']" in result.failure.message
    return prepared.fn, options, result.failure


@pytest.mark.parametrize("memory", [True, False])
def test_the_leak_pair_is_the_lookup_of_a_ckpt_and_the_rename_onto_it(memory):
    fn, options, failure = _leak(memory=memory)
    race = failure.race
    assert race is not None, failure.trace
    assert race.resource == "/racefs/ckpts/a.ckpt"
    assert race.first.op == "fs.stat /racefs/ckpts/a.ckpt"  # remove_checkpoint's existence check
    assert race.second.op.startswith("fs.rename ") and race.second.op.endswith(" -> /racefs/ckpts/a.ckpt")
    assert race.first.tid == 0 and race.second.tid != 0  # the caller, then the executor's worker
    assert race.swapped_outcome == "passes"
    # With memory watched, the swapped schedule brings code under watch that a replay's warm-up does not reach, so
    # the replay's first attempt is stale and runs again: the verdict is the second attempt's (it was the first's).
    assert racecheck.replay(fn, race.swapped_token, **options).ok
    again = racecheck.replay(fn, failure.token, **options)
    assert again.failure.race == race  # the same pair, and the same swapped token


def test_the_cli_prints_the_leak_pair():
    from click.testing import CliRunner
    from racecheck.frontends.cli import main

    out = CliRunner().invoke(main, ["run", "delete-while-queued", "--fs", "posix", "--schedules", "20"])
    assert out.exit_code == 1, out.output
    assert "racing pair on /racefs/ckpts/a.ckpt: T0 fs.stat /racefs/ckpts/a.ckpt" in out.output
