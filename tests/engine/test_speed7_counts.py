"""``benchmarks/engine_counts.py``'s options for comparing what an exploration runs: which variant of
``bench_engine.VARIANTS`` it watches, uncontrolled runs before it (the benchmark's pairs run their plain loop first,
and a library's state left by them changes what the next exploration learns), a tally per file, and the engine found
by the package's own directory (so a base tree put first on PYTHONPATH counts as the engine too)."""

from __future__ import annotations

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "benchmarks", "engine_counts.py")


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True, timeout=300)


def test_counts_a_variant_after_plain_runs_tallied_by_file():
    done = _run("--schedules", "2", "--workload", "noop", "--variant", "off", "--plain", "1", "--by-file")
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    assert "off, 1 plain runs before" in out
    assert "runtime/scheduler.py:*" in out and "engine, all" in out
    engine = next(line for line in out.splitlines() if "engine, all" in line)
    assert int(engine.split("│")[2]) > 0  # the engine's files were found where racecheck was imported from


def test_a_negative_plain_count_is_refused_in_one_line():
    done = _run("--plain", "-1")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].startswith("engine_counts.py: error:") and "--plain" in done.stderr
