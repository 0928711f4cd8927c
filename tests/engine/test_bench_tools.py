"""The performance pass's two deterministic tools run, and the fingerprint is the same in two processes.

``benchmarks/fingerprint.py`` is how a performance change shows it left every schedule as it was; if it printed a
different digest in another process (another hash seed), it could not tell a change from noise.
``benchmarks/engine_counts.py`` is how such a change shows what it saved."""

import os
import subprocess
import sys

import pytest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir)
pytest.importorskip("lightning")


def _run(script: str, *args: str, hash_seed: str = "0") -> str:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    done = subprocess.run(
        [sys.executable, os.path.join(ROOT, "benchmarks", script), *args],
        capture_output=True, text=True, env=env, timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_fingerprint_is_the_same_in_processes_with_other_hash_seeds():
    first = _run("fingerprint.py", "--schedules", "4", hash_seed="1")
    second = _run("fingerprint.py", "--schedules", "4", hash_seed="4242")
    digest = [line for line in first.splitlines() if line.startswith("fingerprint ")]
    assert len(digest) == 1 and len(digest[0].split()[1]) == 64
    assert first == second
    assert "lost_update" in first and "micro workload" in first and "pos" in first


def test_engine_counts_split_the_engine_from_the_workload():
    out = _run("engine_counts.py", "--schedules", "3", "--top", "3", "--workload", "noop")
    assert "engine, all" in out and "scheduler.py:" in out and "x this" in out
