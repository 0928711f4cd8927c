"""Never a dead process (issue 49 item 1).

A keep-last-k checkpoint manager whose background thread runs ``torch.save`` while the training thread removes the
file: the replays that shrink its failure and name its racing pair stop the saving thread inside torch's C++ writer.
The fake file under that writer was closed while the writer, not finished, still held it; the writer's destructor
then wrote to it, and pybind11 turned the error into ``std::terminate`` (exit 134, no report, no token). The
explorations run in a child process, so an abort fails the test instead of killing pytest.

And whatever goes wrong in racecheck's own machinery after a failure was found (shrinking, the racing pair, the
not-a-race check) ends as that failure's report, with its token, and a note of what stopped.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest
import racecheck
from racecheck.search import findings

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
PROGRAM = HERE / "keep_last_checkpoints.py"

pytest.importorskip("torch")

API = textwrap.dedent("""
    import sys
    sys.path.insert(0, {here!r})
    import racecheck
    from keep_last_checkpoints import keep_last
    for fs, strategy, seed in {runs!r}:
        result = racecheck.explore(keep_last, fs=fs, strategy=strategy, schedules=50, seed=seed)
        failure = result.failure
        assert failure is not None, (fs, strategy, seed)
        again = racecheck.replay(keep_last, failure.token, fs=fs, strategy=strategy, seed=seed)
        assert again.failure is not None and again.trace == failure.trace, (fs, strategy, seed)
        print(fs, strategy, seed, type(failure.exception).__name__, failure.incomplete or "-", flush=True)
""")
SEMANTICS = ("windows", "posix", None)  # None: the real disk, where torch's C++ writer writes the file itself
# one run per semantics (random with seed 1 under Windows semantics aborted the interpreter before the fix)
QUICK = [("windows", "random", 1), ("posix", "pct", 0), (None, "dpor", 0)]
EVERY = [(fs, strategy, seed) for fs in SEMANTICS for strategy in ("random", "pct", "dpor") for seed in (0, 1, 3)]


def _child(args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=600)


def _explored(runs: list[tuple]) -> list[str]:
    done = _child(["-c", API.format(here=str(HERE), runs=runs)])
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout}\n{done.stderr[-3000:]}"
    lines = done.stdout.splitlines()
    assert len(lines) == len(runs), done.stdout
    assert all(line.endswith(" -") for line in lines), done.stdout  # nothing of racecheck's own stopped
    return lines


def test_the_checkpoint_manager_is_reported_under_every_semantics():
    lines = _explored(QUICK)
    assert "PermissionError" in lines[0], lines  # WinError 32: removing a file open for writing


@pytest.mark.slow
def test_the_checkpoint_manager_under_every_semantics_strategy_and_seed():
    _explored(EVERY)


def test_the_checkpoint_manager_through_the_cli_leaves_its_report(tmp_path):
    report = tmp_path / "report"
    done = _child(["-m", "racecheck", "explore", f"{PROGRAM}::keep_last", "--fs", "windows", "--strategy", "random",
                   "--seed", "0", "--schedules", "50", "--report", str(report)])
    assert done.returncode == 1, f"exit {done.returncode}\n{done.stdout}\n{done.stderr[-3000:]}"
    results = json.loads((report / "results.json").read_text())
    failures = [f for cell in results["cells"] for f in cell["failures"]]
    assert failures and failures[0]["token"].startswith("rcc1."), results
    replayed = _child(["-m", "racecheck", "replay", failures[0]["token"]])
    assert replayed.returncode == 1, replayed.stdout + replayed.stderr


def _lost_update() -> None:
    box = {"n": 0}

    def bump() -> None:
        box["n"] = box["n"] + 1

    threads = [threading.Thread(target=bump) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert box["n"] == 2


class MachineryBug(Exception):
    """What the injected bug in racecheck's own code raises."""


def _boom(*args, **kwargs):
    raise MachineryBug("injected")


@pytest.mark.parametrize("where,what", [
    ("minimal", "shrinking"), ("search_pair", "naming the racing pair"),
])
def test_racechecks_own_error_after_a_failure_keeps_the_failure(monkeypatch, where, what):
    monkeypatch.setattr(findings, where, _boom)
    result = racecheck.explore(_lost_update, strategy="pct", schedules=50, seed=0)
    failure = result.failure
    assert failure is not None and isinstance(failure.exception, AssertionError)
    assert failure.incomplete.startswith(f"{what} stopped: ") and "MachineryBug: injected" in failure.incomplete
    assert failure.incomplete in result.verdict() and failure.incomplete in str(failure)
    monkeypatch.undo()
    again = racecheck.replay(_lost_update, failure.token)
    assert again.failure is not None and again.trace == failure.trace


def test_racechecks_own_error_in_the_not_a_race_check_keeps_the_failure(monkeypatch):
    def always() -> None:
        raise ValueError("fails under every schedule")

    monkeypatch.setattr(findings, "depends_on_schedule", _boom)
    result = racecheck.explore(always, schedules=5)
    assert isinstance(result.failure.exception, ValueError)
    assert result.failure.incomplete.startswith("the not-a-race check stopped: ")
    assert result.failure.depends_on_schedule is None  # undecided, never "not a race"
