"""KempnerForge #104 (issue 48): DCP's thread-based ``async_save`` runs its collectives on the default group from
its background thread while the main thread enters ``dist.barrier()`` on the same group; two forked ranks whose
threads take the group's collectives in different orders wait in different collectives, a deadlock that racecheck
names rank by rank. The fixed twin (the save's collectives on a group of their own) is clean.

Tokens found with spawned ranks and with forked ones replay in a fresh process. A forked rank's memory layout is its
parent's: while typing_extensions was watched, its protocol metaclass's ``__eq__`` ran as often as set and dict
lookups met classes whose ids collide, so a token found with forked ranks in this (pytest's) process diverged in a
fresh one (step 1742); typing_extensions is now covered like the standard library it backports."""

import os
import subprocess
import sys
import textwrap

import dcp_kf104_programs as programs
import pytest
import racecheck

HERE = os.path.dirname(os.path.abspath(__file__))


def test_the_cross_rank_deadlock_names_each_ranks_collective_and_line():
    failure = racecheck.explore(programs.barrier_during_save, shrink_budget=0, race_budget=0).failure
    assert failure is not None and failure.kind == "deadlock", failure
    message = failure.message
    for rank in (0, 1):  # each rank: its main thread in the barrier, its saver in the save's gather
        assert f"on WORLD (rank {rank}) @dcp_kf104_programs.py:33" in message, message
        assert f"on WORLD (rank {rank}) @torch/distributed/checkpoint/utils.py:" in message, message
    assert message.count("wait barrier #") == 2, message


def _replays_in_a_fresh_process(tmp_path, program: str):
    failure = racecheck.explore(getattr(programs, program)).failure
    assert failure is not None and failure.kind == "deadlock", failure
    assert "on WORLD (rank 1) @torch/distributed/checkpoint/utils.py:" in failure.message, failure.message
    script = tmp_path / "replay.py"
    script.write_text(textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {HERE!r})
        import dcp_kf104_programs as programs, racecheck
        if __name__ == "__main__":  # the spawned ranks import the main module
            result = racecheck.replay(programs.{program}, {failure.token!r}, race_budget=0)
            sys.stdout.write("MESSAGE " + result.failure.message + "\\n" + "TRACE\\n" + result.failure.trace)
    """))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=600)
    out = done.stdout
    assert f"MESSAGE {failure.message}\n" in out, done.stderr[-3000:]
    assert out.split("TRACE\n", 1)[1] == failure.trace


@pytest.mark.slow  # spawned ranks: the template imports torch in each process (seconds)
def test_found_with_default_options_and_the_token_replays_in_a_fresh_process(tmp_path):
    _replays_in_a_fresh_process(tmp_path, "barrier_during_save_spawn")


@pytest.mark.slow  # forked ranks inherit this process's memory layout: their token must not depend on it
def test_a_token_found_with_forked_ranks_replays_in_a_fresh_process(tmp_path):
    _replays_in_a_fresh_process(tmp_path, "barrier_during_save")


def test_a_group_of_its_own_for_the_save_is_clean():
    result = racecheck.explore(programs.separate_group, schedules=5)
    assert result.ok, result.failure


@pytest.mark.slow
def test_the_twin_is_clean_over_more_schedules():
    result = racecheck.explore(programs.separate_group, strategy="pct", seed=1, schedules=40)
    assert result.ok, result.failure
