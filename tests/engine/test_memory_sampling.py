"""Sampled memory watching (``racecheck.control.memory_sampling``): learning runs find the code that touches
shared memory, sampled runs leave the rest unwatched, a failure found by a sampled run is reported from the same
execution watched whole (its token replays anywhere), exhaustion is claimed only by fully watched schedules, and the
systematic strategies never sample."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
import racecheck
import sampled_programs
from racecheck.control.memory_sampling import learns, shared_codes
from racecheck.runtime.access import LIST, MEMORY_OBJ, READ, WRITE, Access, memory

HERE = os.path.dirname(os.path.abspath(__file__))


def _a(obj: str, kind: str) -> Access:
    return Access(memory(obj), kind)


# ----- the learning, as pure logic ----------------------------------------------------------------------------------


def test_code_touching_an_object_another_thread_writes_is_hot_and_read_only_sharing_is_not():
    records = [
        ("writer", 1, (_a("Box#1.value", WRITE),), True),
        ("reader", 2, (_a("Box#1.value", READ),), True),
        ("both_read_a", 1, (_a("Config#1.mode", READ),), True),
        ("both_read_b", 2, (_a("Config#1.mode", READ),), True),
        ("private", 1, (_a("Scratch#1.n", READ), _a("Scratch#1.n", WRITE)), True),
        ("private_too", 2, (_a("Scratch#2.n", WRITE),), True),
    ]
    seen, hot, count = shared_codes(records)
    assert count == 6
    assert seen == {"writer", "reader", "both_read_a", "both_read_b", "private", "private_too"}
    assert hot == {"writer", "reader"}


def test_what_the_first_thread_did_before_any_other_started_shares_nothing():
    records = [
        ("init", 0, (_a("Io#1.inner", WRITE),), False),  # set-up, before the worker started
        ("use", 1, (_a("Io#1.inner", READ),), True),
        ("flag_set", 1, (_a("Io#1.error", WRITE),), True),
        ("flag_get", 0, (_a("Io#1.error", READ),), True),
    ]
    seen, hot, _count = shared_codes(records)
    assert hot == {"flag_set", "flag_get"} and "init" in seen


def test_an_item_change_and_a_listing_of_its_container_by_another_thread_are_shared():
    records = [
        ("put", 1, (_a("dict#3['k']", WRITE), _a("dict#3", "entry")), True),
        ("count", 2, (_a("dict#3", LIST),), True),
        ("other_key", 2, (_a("dict#4['j']", READ),), True),
    ]
    _seen, hot, _count = shared_codes(records)
    assert hot == {"put", "count"}


def test_an_unresolved_access_makes_its_code_hot_with_no_other_thread_touching_anything():
    _seen, hot, _count = shared_codes([("unknown", 1, (Access(MEMORY_OBJ, WRITE),), True), ("plain", 1, (), True)])
    assert hot == {"unknown"}


def test_learning_runs_come_back_each_fourth_as_far():
    assert [index for index in range(70000) if learns(index)] == [255, 1023, 4095, 16383, 65535]


# ----- explorations -------------------------------------------------------------------------------------------------


def test_sampled_runs_leave_the_private_work_unwatched_and_every_function_gets_its_code_back():
    sampled_programs.SEEN.clear()
    result = racecheck.explore(sampled_programs.lazy_race, schedules=40, max_failures=10, shrink_budget=0,
                               race_budget=0)
    assert result.sampled > 0
    sampled = [own for was_sampled, own in sampled_programs.SEEN if was_sampled]
    whole = [own for was_sampled, own in sampled_programs.SEEN if not was_sampled]
    assert sampled and all(sampled)  # bump ran as written in every sampled run
    assert whole and not any(whole)  # and rewritten in every run watched whole
    assert sampled_programs.bump.__code__ is sampled_programs.BUMP_CODE  # given back after the exploration
    whole_runs = result.schedules - result.sampled
    assert (f"plain memory (every access in {whole_runs} of {result.schedules} schedules, the others sampled"
            in result.summary())
    assert result.coverage.to_dict()["sampled"] == result.sampled


def test_a_failure_a_sampled_run_found_is_reported_watched_whole_and_replays_in_another_process():
    result = racecheck.explore(sampled_programs.lazy_race, schedules=200)
    failure = result.failure
    assert failure is not None and "made 2 values" in failure.message
    assert result.sampled > 0 and not learns(failure.schedule_index)  # found by a sampled run
    assert "Scratch@T1#1.n" in failure.trace  # the private work's accesses: the reported run watched everything
    here = racecheck.replay(sampled_programs.lazy_race, failure.token)
    assert here.trace == failure.trace
    script = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {HERE!r})
        import racecheck, sampled_programs
        print(racecheck.replay(sampled_programs.lazy_race, sys.stdin.read()).trace, end="")
        """
    )
    out = subprocess.run([sys.executable, "-c", script], input=failure.token, capture_output=True, text=True,
                         env=dict(os.environ, PYTHONHASHSEED="99"), timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout == failure.trace


def test_only_fully_watched_schedules_exhaust_a_space():
    sampled = racecheck.explore(sampled_programs.small_space, schedules=500)
    whole = racecheck.explore(sampled_programs.small_space, schedules=500, sample_memory=False)
    assert whole.exhausted and whole.sampled == 0
    assert sampled.exhausted and sampled.sampled > 0
    assert sampled.distinct == whole.distinct  # the space of runs watched whole, counted alike
    assert sampled.schedules > whole.schedules  # the sampled runs came first, then the whole space again


@pytest.mark.parametrize("strategy", ["dfs", "dpor"])
def test_the_systematic_strategies_never_sample(strategy):
    result = racecheck.explore(sampled_programs.small_space, strategy=strategy, schedules=50)
    assert result.sampled == 0


@pytest.mark.parametrize("options", [{"sample_memory": False}, {"check_determinism": True}, {"memory": False}])
def test_sampling_is_off_when_asked_or_when_every_run_is_compared(options):
    result = racecheck.explore(sampled_programs.lazy_race, schedules=20, shrink_budget=0, race_budget=0,
                               max_failures=5, **options)
    assert result.sampled == 0


def test_sample_memory_must_be_a_bool():
    with pytest.raises(TypeError, match="sample_memory must be True or False"):
        racecheck.explore(sampled_programs.small_space, sample_memory="yes")
