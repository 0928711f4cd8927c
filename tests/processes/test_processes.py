"""multiprocessing children are threads of the run: the issue's situations found, their twins clean, tokens
replayed in a fresh process, every child reaped."""

import json
import multiprocessing
import os
import subprocess
import sys
import textwrap

import programs
import pytest
import racecheck

HERE = os.path.dirname(os.path.abspath(__file__))


def _explore(fn, strategy, **options):
    return racecheck.explore(fn, strategy=strategy, seed=1, **options)


@pytest.fixture(scope="module")
def found():
    """The racy programs under pct and dpor, explored once for the module's tests."""
    out = {}
    for name in ("leak_fork", "counter_fork"):
        for strategy in ("pct", "dpor"):
            out[name, strategy] = _explore(getattr(programs, name), strategy, schedules=30)
    out["leak_spawn", "dpor"] = _explore(programs.leak_spawn, "dpor", schedules=10)
    return out


@pytest.mark.parametrize("name, message, strategy", [
    ("leak_fork", "leaked epoch=0.ckpt", "pct"), ("leak_fork", "leaked epoch=0.ckpt", "dpor"),
    ("counter_fork", "lost update", "pct"), ("counter_fork", "lost update", "dpor"),
    ("leak_spawn", "leaked epoch=0.ckpt", "dpor"),
])
def test_the_race_is_found(found, name, message, strategy):
    failure = found[name, strategy].failure
    assert failure is not None and message in failure.message, failure
    assert "P1.T0 is T1" in failure.trace


def test_the_racing_pair_and_the_data_races_name_process_and_thread(found):
    result = found["counter_fork", "pct"]
    race = str(result.failure.race)
    assert "T1 (P1.T0) read mp.Value#1" in race or "T2 (P2.T0) read mp.Value#1" in race, race
    assert {access.thread for race in result.data_races for access in (race.first, race.second)} <= {
        "T1 (P1.T0)", "T2 (P2.T0)"}
    leak = found["leak_fork", "pct"]  # the child's file operations are points: the pair is on the checkpoint
    assert "on $TMP1/epoch=0.ckpt" in str(leak.failure.race) and "(P1.T0) fs.open" in str(leak.failure.race)


def test_the_racing_steps_are_the_childs_own_lines(found):
    trace = found["counter_fork", "pct"].failure.trace
    assert "write mp.Value#1  @programs.py" in trace and "read mp.Value#1  @programs.py" in trace


@pytest.mark.parametrize("name", ["leak_fixed_fork", "counter_locked_fork"])
def test_the_locked_twins_are_proved_by_dpor(name):
    result = _explore(getattr(programs, name), "dpor", schedules=200)
    assert result.ok, result.failure
    assert result.coverage.space == "exhausted"


def test_the_tokens_replay_in_a_fresh_process(found, tmp_path):
    tokens = {f"{name}/{strategy}": found[name, strategy].failure.token for name, strategy in found}
    traces = {f"{name}/{strategy}": found[name, strategy].failure.trace for name, strategy in found}
    script = tmp_path / "replay.py"
    script.write_text(textwrap.dedent(f"""
        import json, sys
        sys.path.insert(0, {HERE!r})
        import programs, racecheck
        if __name__ == "__main__":
            out = {{}}
            for name, token in json.loads(sys.stdin.read()).items():
                failure = racecheck.replay(getattr(programs, name.split("/")[0]), token).failure
                out[name] = failure and failure.trace
            print(json.dumps(out))
    """))
    done = subprocess.run([sys.executable, str(script)], input=json.dumps(tokens), capture_output=True, text=True,
                          timeout=120, env=dict(os.environ, PYTHONHASHSEED="4321"))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == traces


@pytest.mark.parametrize("name", ["counter_spawn", "counter_forkserver"])
def test_the_lost_update_with_spawn_and_forkserver_children(name):
    failure = _explore(getattr(programs, name), "dpor", schedules=10, shrink_budget=0, race_budget=0).failure
    assert failure is not None and "lost update" in failure.message, failure


def test_a_deadlock_across_processes_is_exact():
    failure = _explore(programs.deadlock_across_processes, "random", schedules=3).failure
    assert failure is not None and failure.kind == "deadlock", failure
    assert "acquire mp.Lock#1" in failure.message and "join P1" in failure.message


def test_pipe_ends_are_per_process_and_eof_follows_the_last_close():
    result = _explore(programs.pipe_echo, "dpor", schedules=50)
    assert result.ok, result.failure
    assert result.coverage.space == "exhausted"
    hang = _explore(programs.pipe_echo_forgetful, "random", schedules=2).failure  # as the real one hangs
    assert hang is not None and hang.kind == "deadlock" and "recv mp.Pipe#1.1" in hang.message, hang


def test_an_exception_in_a_child_is_a_finding():
    failure = _explore(programs.child_raises, "random", schedules=2).failure
    assert failure is not None and failure.message == "ValueError: from the child", failure


def test_no_child_outlives_its_run():
    failure = _explore(programs.parent_fails_while_child_waits, "random", schedules=3).failure
    assert failure is not None and "parent fails" in failure.message
    assert multiprocessing.active_children() == []


@pytest.mark.parametrize("name", ["shm_overwrite_fork", "shm_overwrite_spawn"])
def test_a_saver_copying_a_buffer_the_trainer_overwrites(name):
    failure = _explore(getattr(programs, name), "dpor", schedules=20).failure
    assert failure is not None and "overwritten while it was read" in failure.message, failure
    assert "write shm rc-shm-1[:4]" in failure.trace and "read shm rc-shm-1[:4]" in failure.trace


def test_the_saver_that_waits_for_the_buffer_is_proved():
    result = _explore(programs.shm_waits_fork, "dpor", schedules=50)
    assert result.ok, result.failure
    assert result.coverage.space == "exhausted"


@pytest.mark.parametrize("name", ["json_executor", "json_pool"])
def test_pool_workers_rewriting_one_json_file(name):
    failure = _explore(getattr(programs, name), "pct", schedules=200).failure
    # the lost update, or a worker reading the file the other one is rewriting
    assert failure is not None and ("update was lost" in failure.message or "JSONDecodeError" in failure.message)


@pytest.mark.parametrize("name", ["json_executor_locked", "json_pool_locked"])
def test_pool_workers_that_lock_the_json_file_are_clean(name):
    result = _explore(getattr(programs, name), "pct", schedules=40)  # dpor proves them: -m slow below
    assert result.ok, result.failure


@pytest.mark.slow  # 231 and 89 schedules of two worker processes each: about 30 s
@pytest.mark.parametrize("name", ["json_executor_locked", "json_pool_locked"])
def test_dpor_proves_the_locked_json_workers(name):
    result = _explore(getattr(programs, name), "dpor", schedules=1000)
    assert result.ok and result.coverage.space == "exhausted", result


def test_torch_start_processes_ranks_are_processes_of_the_run():
    pytest.importorskip("torch.multiprocessing")
    failure = _explore(programs.torch_ranks_fork, "pct", schedules=20, shrink_budget=5, race_budget=5).failure
    assert failure is not None and "lost update" in failure.message, failure
    assert "P2.T0 is T" in failure.trace


@pytest.mark.slow  # every schedule starts two fresh interpreters that import torch: seconds each
def test_torch_spawned_ranks_are_processes_of_the_run():
    pytest.importorskip("torch.multiprocessing")
    failure = _explore(programs.torch_ranks_spawn, "pct", schedules=4, shrink_budget=0, race_budget=0).failure
    assert failure is not None and "lost update" in failure.message, failure


def test_a_childs_name_and_pid_are_the_runs_own():
    first = _explore(programs.names_and_pids, "random", schedules=2).failure
    second = _explore(programs.names_and_pids, "random", schedules=2).failure
    assert first.message == second.message == "RuntimeError: child ForkProcess-1 pid 4243", first.message


def test_barrier_condition_semaphore_and_joinable_queue_across_processes():
    result = _explore(programs.barrier_and_condition, "pct", schedules=30)
    assert result.ok, result.failure


def test_a_childs_own_children_and_queues_are_the_runs():
    result = _explore(programs.grandchild, "random", schedules=3)
    assert result.ok, result.failure
    assert result.processes == 3
