"""Spawn and forkserver children forked from a warm template (``racecheck.control.processes.warm``): the same
schedules as fresh interpreters, the template shared across schedules, no process left after the exploration."""

import ctypes
import functools
import multiprocessing.forkserver
import os
import sys

import programs
import pytest
import racecheck
import warm_programs
from racecheck.control.processes import warm


@pytest.fixture
def subreaper():
    """Orphans of our descendants re-parented to us (Linux), so that a child whose template was killed under it
    is still found by ``_descendants``; undone after the test (other tests look for grandchildren that escaped)."""
    if not sys.platform.startswith("linux"):
        pytest.skip("PR_SET_CHILD_SUBREAPER is Linux's")
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    assert prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
    yield
    prctl(36, 0, 0, 0, 0)


@pytest.fixture
def fresh_interpreters(monkeypatch):
    monkeypatch.setattr(warm, "ENABLED", False)


def _descendants() -> set[int]:
    """Our descendant processes (Linux /proc), the stdlib's resource tracker aside (it lives as long as we do)."""
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as f:
                    parents[int(entry)] = int(f.read().rsplit(b")", 1)[1].split()[1])
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    if b"resource_tracker" in f.read():
                        parents.pop(int(entry))
            except (OSError, IndexError, ValueError):
                pass
    found, frontier = set(), {os.getpid()}
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def _leak_trace(**options):
    return racecheck.explore(programs.leak_spawn, strategy="pct", seed=1, schedules=4, max_failures=4,
                             shrink_budget=0, race_budget=0, **options).failure


@pytest.fixture(scope="module")
def warm_failure():
    failure = _leak_trace()
    assert failure is not None and "leaked epoch=0.ckpt" in failure.message, failure
    return failure


def test_a_schedule_on_a_reused_template_is_the_one_on_a_fresh_interpreter(warm_failure, monkeypatch):
    assert warm_failure.schedule_index > 0  # its template had served the schedules before it
    again = racecheck.replay(programs.leak_spawn, warm_failure.token).failure  # a template of its own
    monkeypatch.setattr(warm, "ENABLED", False)
    fresh = racecheck.replay(programs.leak_spawn, warm_failure.token).failure
    assert warm_failure.trace == again.trace == fresh.trace


def test_children_fork_from_one_template_and_start_from_a_fresh_interpreters_state():
    seen: list[int] = []
    result = racecheck.explore(functools.partial(warm_programs.module_state, "spawn", seen), strategy="dfs",
                               schedules=3)
    assert result.ok, result.failure
    assert len(seen) >= 6 and len(set(seen)) == 1 and seen[0] != os.getpid(), seen


def test_forkserver_children_are_warm_too():
    seen: list[int] = []
    result = racecheck.explore(functools.partial(warm_programs.module_state, "forkserver", seen),
                               strategy="random", seed=1, schedules=2)
    assert result.ok, result.failure
    assert len(set(seen)) == 1 and seen[0] != os.getpid(), seen


def test_without_templates_each_child_is_a_fresh_interpreter(fresh_interpreters):
    seen: list[int] = []
    result = racecheck.explore(functools.partial(warm_programs.module_state, "spawn", seen), strategy="dfs",
                               schedules=1)
    assert result.ok, result.failure
    assert set(seen) == {os.getpid()}, seen


def test_no_template_or_child_outlives_the_exploration(subreaper):
    before = _descendants()
    seen: list[int] = []
    racecheck.explore(functools.partial(warm_programs.module_state, "spawn", seen), strategy="random", seed=3,
                      schedules=2)
    assert seen and seen[0] not in _descendants() and _descendants() <= before
    failed = racecheck.explore(programs.leak_spawn, strategy="dpor", schedules=3, shrink_budget=0, race_budget=0)
    assert failed.failure is not None  # a failing exploration leaves nothing either
    assert _descendants() <= before


def test_nothing_outlives_an_interrupted_exploration(subreaper):
    before = _descendants()
    with pytest.raises(KeyboardInterrupt):
        racecheck.explore(functools.partial(warm_programs.interrupted, os.getpid()), strategy="random", seed=1,
                          schedules=2)
    assert _descendants() <= before


def test_a_template_that_cannot_start_leaves_the_children_to_fresh_interpreters(monkeypatch):
    def broken(self):
        raise OSError("no template here")

    monkeypatch.setattr(warm.Template, "ensure_running", broken)
    seen: list[int] = []
    result = racecheck.explore(functools.partial(warm_programs.module_state, "spawn", seen), strategy="dfs",
                               schedules=1)
    assert result.ok, result.failure
    assert set(seen) == {os.getpid()}, seen


def test_a_child_sees_the_environment_of_its_own_schedule(monkeypatch):
    monkeypatch.setenv("RACECHECK_WARM_PROBE", "before")  # put back after the test
    runs: list = []
    seen: list = []
    result = racecheck.explore(functools.partial(warm_programs.environment, runs, seen), strategy="random", seed=1,
                               schedules=3)
    assert result.ok, result.failure
    assert len(seen) >= 2 and all(mine == got for mine, got in seen), seen


def test_forkserver_children_get_the_modules_the_program_asked_the_forkserver_to_preload(monkeypatch):
    monkeypatch.setattr(multiprocessing.forkserver._forkserver, "_preload_modules", ["__main__", "warm_preloaded"])
    seen: list = []
    result = racecheck.explore(functools.partial(warm_programs.preloaded, seen), strategy="dfs", schedules=1)
    assert result.ok, result.failure
    assert seen and all(seen), seen
