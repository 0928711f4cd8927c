"""The performance pass's deterministic tools run, and the fingerprint is the same in two processes.

``benchmarks/fingerprint.py`` is how a performance change shows it left every schedule as it was; if it printed a
different digest in another process (another hash seed), it could not tell a change from noise.
``benchmarks/engine_counts.py`` is how such a change shows what it saved, and ``benchmarks/search_instructions.py``
what dpor's search costs per schedule against random's, in instructions (valgrind), where seconds are too noisy."""

import os
import shutil
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
    out = _run("engine_counts.py", "--schedules", "3", "--top", "12", "--workload", "noop")
    assert "engine, all" in out and "scheduler.py:" in out and "x this" in out


@pytest.mark.slow  # ~30 s under valgrind; the benchmark tool itself, not a property of the engine
@pytest.mark.skipif(shutil.which("valgrind") is None, reason="search_instructions counts under valgrind")
def test_search_instructions_counts_both_strategies_on_the_futures_program():
    out = _run("search_instructions.py", "--no-scenarios", "--schedules", "4")
    row = next(line for line in out.splitlines() if "futures_order_fixed" in line)
    random_count, dpor_count, ratio = (cell.strip() for cell in row.split("│")[2:5])
    assert int(random_count.replace(",", "")) > 100_000 and int(dpor_count.replace(",", "")) > 100_000
    assert 0.5 < float(ratio) < 5


def test_search_instructions_refuses_a_count_below_one_in_one_line():
    done = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "search_instructions.py"),
                           "--schedules", "0", "--no-scenarios"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "at least 1" in done.stderr


def test_the_rewriter_writes_the_same_code_in_processes_with_other_hash_seeds(tmp_path):
    """``benchmarks/rewrite_same.py`` tells a change to the rewriter's output from none by digests taken in two
    processes; a rewrite that depended on the hash seed (a set's order) would make every comparison differ."""
    import json

    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    try:
        import rewrite_same
    finally:
        sys.path.pop(0)
    listing = tmp_path / "modules.json"
    modules = rewrite_same.modules(["lightning", "racecheck"], 12)
    listing.write_text(json.dumps([(path, name, rewrite_same.read(path)) for path, name in modules]))
    first = json.loads(_run("rewrite_same.py", "--worker", str(listing), hash_seed="1"))["results"]
    second = json.loads(_run("rewrite_same.py", "--worker", str(listing), hash_seed="4242"))["results"]
    assert len(first) > 40 and all(len(digest) == 64 for digest in first.values())
    assert first == second
