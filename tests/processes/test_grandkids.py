"""Grandchildren: a process a child starts is a process of the run (``P2 (child of P1)``), and the multiprocessing
objects a child makes are served by the root. The leak of a checkpoint a grandchild writes while the root evicts
it, found by pct and dpor and replayed in a fresh process; its twin (the child's own Event ordering it) proved;
a deadlock across child and grandchild; a pipe between them exact with EOF; every process reaped."""

import json
import os
import subprocess
import sys
import textwrap

import grandkid_programs as programs
import pytest
import racecheck

HERE = os.path.dirname(os.path.abspath(__file__))


def _explore(name, strategy, **options):
    options.setdefault("schedules", 30)
    return racecheck.explore(getattr(programs, name), strategy=strategy, seed=1, **options)


@pytest.fixture(scope="module")
def found():
    """The leak under pct and dpor (fork), and with a spawned grandchild (dpor), explored once for the module."""
    return {
        ("grand_leak", "pct"): _explore("grand_leak", "pct", fs="posix"),
        ("grand_leak", "dpor"): _explore("grand_leak", "dpor", fs="posix"),
        ("grand_leak_spawn", "dpor"): _explore("grand_leak_spawn", "dpor", fs="posix", schedules=10,
                                               shrink_budget=0, race_budget=0),
    }


@pytest.mark.parametrize("name, strategy", [("grand_leak", "pct"), ("grand_leak", "dpor"),
                                            ("grand_leak_spawn", "dpor")])
def test_the_grandchilds_leak_is_found(found, name, strategy):
    result = found[name, strategy]
    failure = result.failure
    assert failure is not None and failure.message == "AssertionError: leaked epoch=0.ckpt", failure
    assert result.processes == 3
    trace = failure.trace
    assert "P2.T0 is T2 (child of P1)" in trace, trace
    # the grandchild's file operations are points of its own thread, on the one store, at its own lines
    assert "fs.open /racefs/epoch=0.ckpt w  @grandkid_programs.py" in trace and "begin  @grandkid_programs.py:" in trace


def test_the_racing_pair_names_the_grandchilds_thread(found):
    race = str(found["grand_leak", "dpor"].failure.race)
    assert "T0 fs.stat /racefs/epoch=0.ckpt" in race and "T2 (P2.T0) fs.open /racefs/epoch=0.ckpt w" in race, race


def test_the_tokens_replay_in_a_fresh_process(found, tmp_path):
    tokens = {f"{name}/{strategy}": result.failure.token for (name, strategy), result in found.items()}
    traces = {f"{name}/{strategy}": result.failure.trace for (name, strategy), result in found.items()}
    script = tmp_path / "replay.py"
    script.write_text(textwrap.dedent(f"""
        import json, sys
        sys.path.insert(0, {HERE!r})
        import grandkid_programs as programs, racecheck
        if __name__ == "__main__":
            out = {{}}
            for name, token in json.loads(sys.stdin.read()).items():
                failure = racecheck.replay(getattr(programs, name.split("/")[0]), token, fs="posix").failure
                out[name] = failure and failure.trace
            print(json.dumps(out))
    """))
    done = subprocess.run([sys.executable, str(script)], input=json.dumps(tokens), capture_output=True, text=True,
                          timeout=300, env=dict(os.environ, PYTHONHASHSEED="4321"))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == traces


def test_the_twin_ordered_by_the_childs_own_event_is_proved_by_dpor():
    result = _explore("grand_leak_fixed", "dpor", fs="posix", schedules=100)
    assert result.ok, result.failure
    assert result.coverage.space == "exhausted" and result.processes == 3


def test_a_spawned_child_starts_its_grandchild_under_control():
    failure = _explore("grand_leak_spawnroot", "dpor", fs="posix", schedules=10, shrink_budget=0,
                       race_budget=0).failure
    assert failure is not None and "leaked epoch=0.ckpt" in failure.message, failure
    assert "P2.T0 is T2 (child of P1)" in failure.trace


def test_a_deadlock_across_child_and_grandchild_is_exact():
    failure = _explore("grand_deadlock", "random", schedules=2).failure
    assert failure is not None and failure.kind == "deadlock", failure
    message = failure.message
    assert "join P1" in message and "join P2" in message and "recv mp.Pipe#1.1" in message, message


def test_a_pipe_from_child_to_grandchild_is_served_with_eof():
    result = _explore("grand_pipe", "dpor", schedules=100)
    assert result.ok, result.failure
    assert result.coverage.space == "exhausted"


def test_no_grandchild_outlives_its_run():
    """The root fails while the child joins a grandchild that waits for ever: both gone after the run, no zombie
    left (the child is killed before it reaps its grandchild: the root collects it)."""
    programs.PIDS.clear()
    failure = _explore("root_fails_while_grandchild_waits", "random", schedules=2).failure
    assert failure is not None and "root fails" in failure.message, failure
    assert len(programs.PIDS) >= 2
    assert [pid for pid in programs.PIDS if os.path.exists(f"/proc/{pid}")] == []


def test_a_child_terminates_its_grandchild():
    """is_alive, terminate, join and exitcode of a grandchild: points of the child, the real signal and wait
    made by the child (its real parent): exit code -15."""
    result = _explore("grand_terminate", "dpor", schedules=50)
    assert result.ok, result.failure
    assert result.coverage.space == "exhausted"


def test_a_child_ends_after_the_grandchild_it_did_not_join():
    result = _explore("grand_unjoined", "dpor", fs="posix", schedules=50)
    assert result.ok, result.failure
    assert result.coverage.space == "exhausted"


def test_a_failing_root_does_not_wait_for_a_child_joining_its_grandchild():
    """The child returned and its exit joins a grandchild that waits for ever; the root fails meanwhile: the run
    ends, grandchild reaped before child (a schedule takes well under the 5 s a reap may wait; not timed here)."""
    failure = _explore("root_fails_after_child_ended", "random", schedules=2, shrink_budget=0, race_budget=0).failure
    assert failure is not None and failure.message == "AssertionError: root fails", failure
