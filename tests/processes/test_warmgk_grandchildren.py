"""Spawn and forkserver grandchildren forked from the root's warm templates
(``racecheck.control.processes.grand_warm``): one template across schedules, the child's environment, the same
schedules as fresh interpreters, no process left after the exploration."""

import functools
import os

import grandkid_programs
import pytest
import racecheck
import warmgk_programs
from racecheck.control.processes import warm
from test_warm import _descendants, subreaper  # noqa: F401 - the fixture, shared


def _explore(seen, inner="spawn", **options):
    return racecheck.explore(functools.partial(warmgk_programs.grand_module_state, seen, "fork", inner),
                             strategy="random", seed=1, schedules=3, **options)


@pytest.mark.parametrize("inner", ["spawn", "forkserver"])
def test_grandchildren_fork_from_one_template_with_a_fresh_interpreters_state(inner):
    seen: list = []
    result = _explore(seen, inner)
    assert result.ok, result.failure  # each grandchild saw COUNT 1 and the child's own environment
    parents = {parent for middle, kids in seen for _, parent, _ in kids}
    assert len(seen) >= 3 and len(parents) == 1, seen  # one template's forks, schedule after schedule
    assert parents.isdisjoint({os.getpid(), *(middle for middle, _ in seen)}), seen


def test_without_templates_each_grandchild_is_a_fresh_interpreter(monkeypatch):
    monkeypatch.setattr(warm, "ENABLED", False)
    seen: list = []
    result = _explore(seen)
    assert result.ok, result.failure
    parents = [{parent for _, parent, _ in kids} for _, kids in seen]
    assert len({next(iter(p)) for p in parents}) == len(seen), seen  # its real parent: a new child each schedule


def test_a_grandchilds_schedule_on_a_template_is_the_one_on_a_fresh_interpreter(monkeypatch):
    found = racecheck.explore(grandkid_programs.grand_leak_spawn, strategy="pct", seed=1, fs="posix",
                              schedules=10, shrink_budget=0, race_budget=0).failure
    assert found is not None and found.message == "AssertionError: leaked epoch=0.ckpt", found
    assert found.schedule_index > 0  # its grandchild forked from a template that had served a schedule before
    again = racecheck.replay(grandkid_programs.grand_leak_spawn, found.token, fs="posix").failure  # a new template
    monkeypatch.setattr(warm, "ENABLED", False)
    fresh = racecheck.replay(grandkid_programs.grand_leak_spawn, found.token, fs="posix").failure
    assert again is not None and fresh is not None and found.trace == again.trace == fresh.trace


def test_no_template_or_grandchild_outlives_the_exploration(subreaper):  # noqa: F811
    before = _descendants()
    seen: list = []
    _explore(seen)
    assert seen and _descendants() <= before
    failed = racecheck.explore(grandkid_programs.grand_leak_spawn, strategy="pct", seed=1, fs="posix", schedules=5,
                               shrink_budget=0, race_budget=0)
    assert failed.failure is not None  # a failing exploration leaves nothing either
    assert _descendants() <= before


def test_nothing_outlives_an_interrupted_exploration(subreaper):  # noqa: F811
    before = _descendants()
    with pytest.raises(KeyboardInterrupt):
        racecheck.explore(functools.partial(warmgk_programs.grand_interrupted, os.getpid()), strategy="random",
                          seed=1, schedules=2)
    assert _descendants() <= before
