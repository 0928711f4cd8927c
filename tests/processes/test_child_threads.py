"""Several threads per child, and the child's plain memory watched: a lost update between two threads of one child
found by pct and dpor (fork and spawn) and replayed in a fresh process; its locked twin proved; the stdlib executor
working in a child."""

import json
import os
import subprocess
import sys
import textwrap

import pytest
import racecheck
import thread_programs

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = [("lost_update_fork", "pct"), ("lost_update_fork", "dpor"), ("lost_update_spawn", "dpor")]


@pytest.fixture(scope="module")
def found():
    out = {}
    for name, strategy in CASES:
        quick = {"shrink_budget": 0, "race_budget": 0} if "spawn" in name else {}
        out[name, strategy] = racecheck.explore(getattr(thread_programs, name), strategy=strategy, schedules=30,
                                                seed=1, **quick)
    return out


@pytest.mark.parametrize("name, strategy", CASES)
def test_a_race_between_two_threads_of_a_child_is_found(found, name, strategy):
    failure = found[name, strategy].failure
    assert failure is not None and "lost update in the child: 1" in failure.message, failure
    # the child's threads are threads of the run, its objects named under the process
    assert "P1.T1 is T2" in failure.trace and "P1.T2 is T3" in failure.trace, failure.trace
    assert "write P1.dict#1['n']  @thread_programs.py" in failure.trace, failure.trace


def test_the_racing_pair_and_the_data_races_name_process_and_thread(found):
    result = found["lost_update_fork", "pct"]
    race = str(result.failure.race)
    assert "P1.dict#1['n']" in race and "T2 (P1.T1)" in race and "T3 (P1.T2)" in race, race
    assert {r.obj for r in result.data_races} == {"P1.dict#1['n']"}, result.data_races
    assert {a.thread for r in result.data_races for a in (r.first, r.second)} == {"T2 (P1.T1)", "T3 (P1.T2)"}


@pytest.mark.parametrize("name", ["locked_fork", "rlocked_fork"])
def test_the_locked_twin_is_proved_by_dpor(name):
    result = racecheck.explore(getattr(thread_programs, name), strategy="dpor", schedules=200, seed=1)
    assert result.ok, result.failure
    assert result.coverage.space == "exhausted" and result.data_races == []


def test_the_stdlib_executor_works_in_a_child():
    result = racecheck.explore(thread_programs.executor_in_child, strategy="pct", schedules=10, seed=1)
    assert result.ok, result.failure and result.failure.trace


def test_the_tokens_replay_in_a_fresh_process(found, tmp_path):
    tokens = {"/".join(key): found[key].failure.token for key in found}
    traces = {"/".join(key): found[key].failure.trace for key in found}
    script = tmp_path / "replay.py"
    script.write_text(textwrap.dedent(f"""
        import json, sys
        sys.path.insert(0, {HERE!r})
        import thread_programs, racecheck
        if __name__ == "__main__":
            out = {{}}
            for key, token in json.loads(sys.stdin.read()).items():
                failure = racecheck.replay(getattr(thread_programs, key.split("/")[0]), token).failure
                out[key] = failure and failure.trace
            print(json.dumps(out))
    """))
    done = subprocess.run([sys.executable, str(script)], input=json.dumps(tokens), capture_output=True, text=True,
                          timeout=300, env=dict(os.environ, PYTHONHASHSEED="4321"))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == traces


def test_no_point_inside_a_real_locks_critical_section_in_a_child():
    """Preempting a child's thread inside a real lock (made before the run) would leave its other thread blocked on
    the real lock for real: a hang. As in the parent, no memory point is made there."""
    result = racecheck.explore(thread_programs.real_lock_fork, strategy="pct", schedules=20, seed=1)
    assert result.ok, result.failure


def test_line_points_in_a_child_are_the_same_in_every_run(tmp_path):
    """The proxy's caller that stands at the child's line is no line point itself (it lives in the child's file):
    with preempt="lines", a schedule runs alike twice, in a fresh process where no such caller was made yet."""
    script = tmp_path / "lines.py"
    script.write_text(textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {HERE!r})
        import thread_programs, racecheck
        if __name__ == "__main__":
            result = racecheck.explore(thread_programs.locked_fork, strategy="random", schedules=2, seed=5,
                                       preempt="lines", memory=False, check_determinism=True)
            print(result.ok, result.failure and result.failure.message)
    """))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "True None", done.stdout
