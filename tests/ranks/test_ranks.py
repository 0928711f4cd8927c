"""Ranks are processes of the run: a retention race across two ranks through a misplaced barrier found by pct and
dpor and replayed in a fresh process, its twin clean, mismatched collectives reported as a deadlock."""

import inspect
import json
import os
import subprocess
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch")
import racecheck  # noqa: E402
import rank_programs as programs  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def _explore(fn, strategy, **options):
    return racecheck.explore(fn, strategy=strategy, seed=1, **options)


@pytest.fixture(scope="module")
def found():
    """The racy retention under pct and dpor, explored once for the module's tests."""
    return {strategy: _explore(programs.retention_fork, strategy, schedules=20) for strategy in ("pct", "dpor")}


@pytest.mark.parametrize("strategy", ["pct", "dpor"])
def test_the_retention_race_across_ranks_is_found(found, strategy):
    failure = found[strategy].failure
    assert failure is not None and "step1 was deleted while its shard was being written" in failure.message, failure
    assert "P1.T0 is T" in failure.trace and "P2.T0 is T" in failure.trace
    retention, write = failure.trace.find("fs.rmtree $TMP1/step1"), failure.trace.find("fs.write $TMP1/step1/rank1.pt")
    assert 0 < retention < write, failure.trace  # rank 0's retention ran between rank 1's barrier and its write
    assert "enter barrier #1 on WORLD (rank 0)" in failure.trace


@pytest.mark.parametrize("strategy", ["pct", "dpor"])
def test_the_retention_race_names_its_racing_pair(found, strategy):
    """Swapped, rank 0's assertion fails instead of rank 1's: both reach the test as torch's ProcessRaisedException
    at one line of spawn.py, told apart by where the child raised it (``runtime.relayed``)."""
    failure = found[strategy].failure
    race = failure.race
    assert race is not None, failure.notes
    assert (race.first.op, race.second.op) == ("fs.rmtree $TMP1/step1", "fs.write $TMP1/step1/rank1.pt"), race
    assert (race.first.name, race.second.name) == ("P1.T0", "P2.T0") and race.resource == "$TMP1/step1", race
    assert "rank 0: step1 is incomplete after the barrier" in race.swapped_outcome, race.swapped_outcome


def test_the_tokens_replay_in_a_fresh_process(found, tmp_path):
    tokens = {strategy: result.failure.token for strategy, result in found.items()}
    traces = {strategy: result.failure.trace for strategy, result in found.items()}
    script = tmp_path / "replay.py"
    script.write_text(textwrap.dedent(f"""
        import json, sys
        sys.path.insert(0, {HERE!r})
        import racecheck
        import rank_programs as programs
        if __name__ == "__main__":
            out = {{}}
            for strategy, token in json.loads(sys.stdin.read()).items():
                failure = racecheck.replay(programs.retention_fork, token).failure
                out[strategy] = failure and failure.trace
            print(json.dumps(out))
    """))
    done = subprocess.run([sys.executable, str(script)], input=json.dumps(tokens), capture_output=True, text=True,
                          timeout=300, env=dict(os.environ, PYTHONHASHSEED="4321"))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == traces


def test_the_barrier_placed_right_is_proved_by_dpor():
    # 5 schedules: the order in which ranks enter a collective decides nothing, and dpor does not explore it
    result = _explore(programs.retention_fixed_fork, "dpor", schedules=50)
    assert result.ok, result.failure
    assert result.coverage.space == "exhausted", result.coverage


def test_mismatched_collectives_are_a_deadlock_naming_each_ranks_collective_and_line():
    failure = _explore(programs.mismatch_fork, "random", schedules=2, shrink_budget=0, race_budget=0).failure
    assert failure is not None and failure.kind == "deadlock", failure
    source, first = inspect.getsourcelines(programs._mismatch_rank)
    line = {text.strip().split("(")[0]: first + i for i, text in enumerate(source)}
    assert f"wait broadcast #0 on WORLD (rank 0) @rank_programs.py:{line['dist.broadcast']}" in failure.message, failure
    assert f"wait barrier #0 on WORLD (rank 1) @rank_programs.py:{line['dist.barrier']}" in failure.message


def test_a_rank_that_skips_a_collective_and_exits_leaves_the_other_in_a_deadlock():
    failure = _explore(programs.skip_fork, "random", schedules=2, shrink_budget=0, race_budget=0).failure
    assert failure is not None and failure.kind == "deadlock", failure
    assert "wait barrier #0 on WORLD (rank 0) @rank_programs.py" in failure.message, failure.message


def test_ranks_as_processes_meeting_on_env():
    result = _explore(programs.env_processes, "pct", schedules=4)
    assert result.ok, result.failure


def test_a_dcp_save_by_two_ranks_runs_on_the_model():
    """On real gloo it would hang under the baton (a rank's rendezvous waits for a parked peer): passing means the
    save's gathers, scatters and barriers ran on the model."""
    result = _explore(programs.dcp_save_fork, "pct", schedules=2)
    assert result.ok, result.failure


def test_a_collective_from_a_thread_the_rank_started_is_the_ranks():
    result = _explore(programs.thread_in_rank_fork, "dpor", schedules=20, shrink_budget=0, race_budget=0)
    assert result.ok, result.failure


@pytest.mark.slow  # every schedule spawns two fresh interpreters that import torch: seconds each
def test_spawned_ranks_race_is_found():
    failure = _explore(programs.retention_spawn, "dpor", schedules=6, shrink_budget=0, race_budget=0,
                       watchdog=10).failure  # a spawned rank imports torch: seconds, more on a loaded machine
    assert failure is not None and "step1 was deleted while its shard was being written" in failure.message, failure
