"""Manager proxies served by the run: ``d["n"] += 1`` on a ``Manager().dict()`` from two children is a lost update
found by pct and dpor (fork and spawn) and replayed in a fresh process, its twin locked with the manager's
``Lock()`` proved by dpor with no data race; a list, a queue and an event of a manager shared by children; what is
not served says so (an escape, or a clear error)."""

import json
import os
import subprocess
import sys
import textwrap

import manager_programs
import pytest
import racecheck

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = [("dict_fork", "pct"), ("dict_fork", "dpor"), ("dict_spawn", "dpor")]


@pytest.fixture(scope="module")
def found():
    out = {}
    for name, strategy in CASES:
        quick = {"shrink_budget": 0} if "spawn" in name else {}  # each spawn schedule costs more
        out[name, strategy] = racecheck.explore(getattr(manager_programs, name), strategy=strategy, schedules=30,
                                                seed=1, **quick)
    return out


@pytest.mark.parametrize("name, strategy", CASES)
def test_a_lost_update_on_a_manager_dict_is_found(found, name, strategy):
    result = found[name, strategy]
    failure = result.failure
    assert failure is not None and "lost update: counts['n'] == 1" in failure.message, failure
    # the children's reads and writes of the key are points of the run, at the child's line, and nothing else is
    assert "read mgr.dict#1['n']  @manager_programs.py:8" in failure.trace, failure.trace
    assert "write mgr.dict#1['n']  @manager_programs.py:8" in failure.trace, failure.trace
    assert "ManagedDict" not in failure.trace, failure.trace
    race = str(failure.race)
    assert "mgr.dict#1['n']" in race and "T1 (P1.T0)" in race and "T2 (P2.T0)" in race, race
    assert {r.obj for r in result.data_races} == {"mgr.dict#1['n']"}, result.data_races
    # no server process ran beside the run (the process objects handed to the stdlib are named as before)
    assert not any("manager" in line.lower() for line in result.coverage.escaped), result.coverage.escaped


def test_the_locked_twin_is_proved_by_dpor():
    result = racecheck.explore(manager_programs.dict_locked_fork, strategy="dpor", schedules=200, seed=1)
    assert result.ok, result.failure
    assert result.coverage.space == "exhausted" and result.data_races == []


def test_a_managers_list_queue_and_event_across_processes():
    result = racecheck.explore(manager_programs.list_queue_event, strategy="dpor", schedules=200, seed=1)
    assert result.ok, result.failure
    assert result.coverage.space == "exhausted" and result.data_races == []  # two appends: atomic, no race


def test_the_tokens_replay_in_a_fresh_process(found, tmp_path):
    tokens = {"/".join(key): found[key].failure.token for key in found}
    traces = {"/".join(key): found[key].failure.trace for key in found}
    script = tmp_path / "replay.py"
    script.write_text(textwrap.dedent(f"""
        import json, sys
        sys.path.insert(0, {HERE!r})
        import manager_programs, racecheck
        if __name__ == "__main__":
            out = {{}}
            for key, token in json.loads(sys.stdin.read()).items():
                failure = racecheck.replay(getattr(manager_programs, key.split("/")[0]), token).failure
                out[key] = failure and failure.trace
            print(json.dumps(out))
    """))
    done = subprocess.run([sys.executable, str(script)], input=json.dumps(tokens), capture_output=True, text=True,
                          timeout=300, env=dict(os.environ, PYTHONHASHSEED="4321"))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == traces


def test_a_manager_racecheck_does_not_serve_is_named_among_the_escapes():
    result = racecheck.explore(manager_programs.direct_sync_manager, strategy="random", schedules=2, seed=1)
    assert result.ok, result.failure
    assert any("a manager's server process (SyncManager)" in line for line in result.coverage.escaped), \
        result.coverage.escaped


def test_what_a_served_manager_does_not_serve_is_a_clear_error():
    result = racecheck.explore(manager_programs.manager_pool, strategy="random", schedules=1, seed=1)
    assert not result.ok
    assert "NotImplementedError: racecheck: Manager().Pool() is not served" in result.failure.message, \
        result.failure.message


def test_a_lost_update_on_a_managers_namespace_is_found_once_per_access():
    """Each attribute access is one point on ``mgr.Namespace#1.x``; the memory hooks add none of their own."""
    result = racecheck.explore(manager_programs.namespace_fork, strategy="dpor", schedules=30, seed=1)
    failure = result.failure
    assert failure is not None and "lost update: namespace.x == 1" in failure.message, failure
    assert "read mgr.Namespace#1.x  @manager_programs.py" in failure.trace, failure.trace
    assert "ManagedNamespace" not in failure.trace, failure.trace
    assert {r.obj for r in result.data_races} == {"mgr.Namespace#1.x"}, result.data_races


def test_a_served_arrays_items_are_points_once():
    """The memory hooks leave a served object's items to it (``memory_hooks.no_items``): no ``ProcessArray#1[0]``."""
    result = racecheck.explore(manager_programs.array_fork, strategy="dpor", schedules=30, seed=1)
    failure = result.failure
    assert failure is not None and "lost update: array[0] == 1" in failure.message, failure
    assert "read mp.Array#1[0]" in failure.trace and "ProcessArray" not in failure.trace, failure.trace
