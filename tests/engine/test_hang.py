"""A hang is a hang (issue 49 item 2): a controlled thread that waits on something racecheck does not control (a
socket nobody writes, a child process that does not end, a real lock) is reported as a hang, with one bound for
every such wait (``watchdog.hang_bound``: 5 watchdogs), never as a race: not by ``explore``'s verdict, not by the
CLI's line, its exit status or its reports, not by the gate."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import hang_programs
import pytest
import racecheck
from racecheck.report.gate import Baseline, Expectation, judge
from racecheck.report.model import CellResult, FailureRecord
from racecheck.runtime.watchdog import HANG_WATCHDOGS, hang_bound

HERE = Path(__file__).resolve().parent
WATCHDOG = 0.1
BOUND = hang_bound(WATCHDOG)


@pytest.fixture(autouse=True)
def _close_what_waits():
    yield
    hang_programs.close_all()


@pytest.mark.parametrize("program,waiting", [
    (hang_programs.socket_nobody_writes, "waiting in 'external socket recv' on another process or the network"),
    (hang_programs.pipe_nobody_writes, "stuck in "),
    (hang_programs.child_that_does_not_end, "waiting in 'external subprocess wait' on another process"),
    (hang_programs.real_lock_across_a_point, ""),
])
def test_every_uncontrolled_wait_is_a_hang_after_one_bound(program, waiting):
    result = racecheck.explore(program, schedules=3, watchdog=WATCHDOG)
    failure = result.failure
    assert failure is not None and failure.hang and failure.kind == "uncontrolled-blocking"
    assert f"made no scheduling point for {BOUND:g}s" in failure.message
    assert waiting in failure.message
    assert "an uncontrolled wait, not a race" in failure.message
    assert f"a hang after {HANG_WATCHDOGS} watchdogs" in failure.message
    assert result.verdict().startswith("HANG after ") and "FAILED" not in result.verdict()
    assert failure.race is None and failure.depends_on_schedule is None  # never judged as a race, nor not one
    assert "racecheck found a schedule that hangs" in str(failure)


def test_a_hang_of_the_first_run_is_waited_out_once_and_its_token_replays_it():
    result = racecheck.explore(hang_programs.socket_nobody_writes, schedules=5, watchdog=WATCHDOG)
    assert result.schedules == 1 and result.failure.schedule_index == 0  # not run again to find it again
    hang_programs.close_all()
    again = racecheck.replay(hang_programs.socket_nobody_writes, result.failure.token, watchdog=WATCHDOG)
    assert again.failure.hang and again.failure.message == result.failure.message
    assert again.trace == result.trace


def test_the_bound_scales_with_the_watchdog():
    assert hang_bound(0.5) == 2.5 and hang_bound(2.0) == 10.0 and hang_bound(None) == hang_bound(2.0)


def test_the_child_of_a_hang_is_stopped():
    result = racecheck.explore(hang_programs.child_that_does_not_end, schedules=1, watchdog=WATCHDOG)
    assert "stopped 1 child process" in result.failure.message
    assert hang_programs.CHILDREN
    assert all(child.poll() is not None for child in hang_programs.CHILDREN)  # killed by racecheck, not this test


def test_a_hang_is_not_a_race_in_the_cli_and_its_report(tmp_path):
    report = tmp_path / "report"
    done = subprocess.run(
        [sys.executable, "-m", "racecheck", "explore", f"{HERE / 'hang_programs.py'}::socket_nobody_writes",
         "--watchdog", str(WATCHDOG), "--schedules", "2", "--report", str(report)],
        capture_output=True, text=True, timeout=300, cwd=HERE.parents[1], env={**os.environ, "PYTHONPATH": str(HERE)},
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "RACE FOUND" not in done.stdout and "HANG (an uncontrolled wait, not a race)" in done.stdout
    assert "0 races found, 1 cell hanging" in done.stdout
    results = json.loads((report / "results.json").read_text())
    assert [cell["verdict"] for cell in results["cells"]] == ["hang"]
    assert results["summary"]["races"] == 0 and results["summary"]["hangs"] == 1


def _cell(kind: str) -> CellResult:
    failure = FailureRecord(kind=kind, message="UncontrolledBlocking: hang: T1 ...", schedule_index=0, preemptions=0,
                            steps=3, trace="", engine_token="rc1.x", token="rcc1.x")
    return CellResult(scenario="s", target="t", fs="posix", strategy="pct", seed=0, requested=1, schedules=1,
                      failures=[failure])


def test_the_gate_does_not_take_a_hang_for_a_race():
    cell = _cell("uncontrolled-blocking")
    assert cell.verdict == "hang" and cell.races == []
    assert _cell("exception").verdict == "race"
    expectation = Expectation(scenario="s", target="t", fs="posix", strategy="pct", seed=0, schedules=1,
                              expect="race", relative_throughput=None)
    baseline = Baseline(tolerance=0.1, reference_schedules=1, cells=(expectation,), raw={})
    (verdict,) = judge(baseline, [cell], 0.0)
    assert not verdict.ok and "no longer races: it hangs" in verdict.text
