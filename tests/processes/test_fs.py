"""One fake filesystem for every process of a run (``fs=``): a child's file operations are the parent's store's,
as points of the child's thread; the issue's leak found under posix and windows semantics, fork and spawn, and
replayed in a fresh process; a power loss takes the run's processes down together. And a spawned child has the
stand-ins a forked one inherits."""

import json
import multiprocessing
import os
import subprocess
import sys
import textwrap

import fs_programs
import pytest
import racecheck
from racecheck.fakefs import FakeFS

HERE = os.path.dirname(os.path.abspath(__file__))

CASES = [  # (program, fs, strategy, what the failure says)
    ("leak_fork", "posix", "pct", "leaked epoch=0.ckpt"),
    ("leak_fork", "posix", "dpor", "leaked epoch=0.ckpt"),
    ("evict_fork", "windows", "pct", "[WinError 32]"),
    ("evict_fork", "windows", "dpor", "[WinError 32]"),
    ("leak_spawn", "posix", "dpor", "leaked epoch=0.ckpt"),
    ("evict_spawn", "windows", "dpor", "[WinError 32]"),
]


def _explore(name, fs, strategy, **options):
    options.setdefault("schedules", 30)
    return racecheck.explore(getattr(fs_programs, name), strategy=strategy, seed=1, fs=fs, **options)


@pytest.fixture(scope="module")
def found():
    """The racy programs, explored once for the module's tests (spawned children cost a second each: no
    shrinking or pair search for them)."""
    out = {}
    for name, fs, strategy, _ in CASES:
        quick = {"shrink_budget": 0, "race_budget": 0} if "spawn" in name else {}
        out[name, fs, strategy] = _explore(name, fs, strategy, **quick)
    return out


@pytest.mark.parametrize("name, fs, strategy, message", CASES)
def test_the_leak_on_the_fake_filesystem_is_found(found, name, fs, strategy, message):
    failure = found[name, fs, strategy].failure
    assert failure is not None and message in failure.message, failure
    # the child's file operations are points of its thread, on the one store
    assert "fs.open /racefs/epoch=0.ckpt w  @fs_programs.py" in failure.trace, failure.trace


def test_the_racing_pair_is_the_parents_look_and_the_childs_open(found):
    race = str(found["evict_fork", "windows", "dpor"].failure.race)
    assert "T1 (P1.T0) fs.open /racefs/epoch=0.ckpt w" in race and "T0 fs.stat /racefs/epoch=0.ckpt" in race, race


@pytest.mark.parametrize("fs", ["posix", "windows"])
def test_the_fixed_twin_is_proved_by_dpor(fs):
    result = _explore("leak_fixed_fork", fs, "dpor", schedules=100)
    assert result.ok, result.failure
    assert result.coverage.space == "exhausted"


@pytest.mark.parametrize("name", ["operations_fork", "operations_spawn"])
def test_a_childs_file_operations_are_the_parents_store(name):
    """open/write/fsync/rename/read, os.open/write/close, listdir, getsize and fsspec's racefs:// in the child;
    the parent reads what it wrote (a failure here is the program's assertion)."""
    result = _explore(name, "posix", "random", schedules=2)
    assert result.ok, result.failure and result.failure.trace


def test_a_power_loss_takes_the_runs_processes_down():
    result = racecheck.explore(fs_programs.save_in_child_fork, strategy="dfs", schedules=100, seed=1,
                               fs=FakeFS(crash=True, fault_window=16), on_crash=fs_programs.recovery)
    failure = result.failure
    assert failure is not None and "partial checkpoint after power loss: b''" in failure.message, failure
    assert result.crashes > 0
    crash = next(line for line in failure.trace.splitlines() if "CRASH (power loss" in line)
    assert crash.index("CRASH") > failure.trace.splitlines()[0].index("T1"), failure.trace  # the child's column
    assert multiprocessing.active_children() == []


@pytest.mark.parametrize("name", ["two_savers_fork", pytest.param("two_savers_spawn", marks=pytest.mark.slow)])
def test_a_power_loss_in_one_child_ends_every_process_of_the_run(name):
    result = racecheck.explore(getattr(fs_programs, name), strategy="random", schedules=8, seed=1,
                               fs=FakeFS(crash=True, fault_window=16), on_crash=lambda: None)
    assert result.ok and result.crashes > 0, result.failure
    assert multiprocessing.active_children() == []


def test_a_spawned_childs_own_lock_and_sleep_are_points():
    failure = racecheck.explore(fs_programs.spawned_stand_ins, strategy="random", schedules=1, seed=1,
                                shrink_budget=0, race_budget=0).failure
    assert failure is not None and failure.message == "RuntimeError: child pid 4243", failure
    assert "acquire P1.Lock#1  @fs_programs.py" in failure.trace, failure.trace
    assert "sleep 3600" in failure.trace, failure.trace


def test_the_tokens_replay_in_a_fresh_process(found, tmp_path):
    tokens = {"/".join(key): found[key].failure.token for key in found}
    traces = {"/".join(key): found[key].failure.trace for key in found}
    script = tmp_path / "replay.py"
    script.write_text(textwrap.dedent(f"""
        import json, sys
        sys.path.insert(0, {HERE!r})
        import fs_programs, racecheck
        if __name__ == "__main__":
            out = {{}}
            for key, token in json.loads(sys.stdin.read()).items():
                name, fs, _ = key.split("/")
                failure = racecheck.replay(getattr(fs_programs, name), token, fs=fs).failure
                out[key] = failure and failure.trace
            print(json.dumps(out))
    """))
    done = subprocess.run([sys.executable, str(script)], input=json.dumps(tokens), capture_output=True, text=True,
                          timeout=300, env=dict(os.environ, PYTHONHASHSEED="4321"))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == traces


@pytest.mark.slow  # a fresh interpreter per schedule: seconds each
@pytest.mark.parametrize("name, fs, message", [
    ("leak_spawn", "posix", "leaked epoch=0.ckpt"), ("evict_spawn", "windows", "[WinError 32]"),
    ("leak_forkserver", "posix", "leaked epoch=0.ckpt"),
])
def test_pct_finds_the_leak_with_spawned_children(name, fs, message):
    failure = _explore(name, fs, "pct", schedules=20, shrink_budget=0, race_budget=0).failure
    assert failure is not None and message in failure.message, failure
