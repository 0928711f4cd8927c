"""What a new user does first: the README example, and the CLI's answers to bad input (one line, exit 2)."""

import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from racecheck.cli import main

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_example_runs_as_written(tmp_path):
    text = README.read_text()
    block = re.search(r"## Explore a racy function of your own\s+```python\n(.*?)```", text, re.S).group(1)
    script = tmp_path / "counter.py"
    script.write_text(block)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "racecheck found a failing schedule" in out.stdout
    assert "replay with: racecheck.replay(fn, 'rc1.pct.0." in out.stdout


@pytest.mark.parametrize(
    "args, message",
    [
        (["run", "no-such-scenario"], "unknown scenario 'no-such-scenario'"),
        (["run", "delete-while-queued", "--target", "no_such_module:Thing"], "cannot import target module"),
        (["run", "delete-while-queued", "--target", "os:path"], "is not a class"),
        (["run", "delete-while-queued", "--target", "nocolon"], "must look like 'package.module:ClassName'"),
        (["replay", "delete-while-queued", "rc1.not.a.token"], "malformed token"),
        (["replay", "delete-while-queued", "banana"], "not a racecheck token"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, message):
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and message in lines[0] and lines[0].startswith("racecheck: error:")
    assert "Traceback" not in result.output


def test_cli_finds_the_race_on_stock_and_replays_it():
    pytest.importorskip("lightning")
    runner = CliRunner()
    found = runner.invoke(main, ["run", "delete-while-queued", "--schedules", "50"])
    assert found.exit_code == 1, found.output
    token = re.search(r"'(rc1\.[^']+)'", found.output).group(1)
    again = runner.invoke(main, ["replay", "delete-while-queued", token])
    assert again.exit_code == 1
    assert "leaked checkpoint" in again.output
    fixed = runner.invoke(
        main,
        ["run", "delete-while-queued", "--target", "racecheck.fixed_impl:LockedAsyncCheckpointIO", "--strategy", "dfs"],
    )
    assert fixed.exit_code == 0, fixed.output
    assert "search space exhausted" in fixed.output


def test_windows_fakefs_scenario_stock_races_fixed_passes():
    pytest.importorskip("lightning")
    runner = CliRunner()
    stock = runner.invoke(main, ["run", "delete-while-queued-windows", "--schedules", "100"])
    assert stock.exit_code == 1, stock.output
    assert "fs.remove" in stock.output or "fs." in stock.output  # file operations are scheduling points
    token = re.search(r"'(rc1\.[^']+)'", stock.output).group(1)
    again = runner.invoke(main, ["replay", "delete-while-queued-windows", token])
    assert again.exit_code == 1 and "leaked checkpoint" in again.output
    fixed = runner.invoke(
        main,
        ["run", "delete-while-queued-windows", "--target", "racecheck.fixed_impl:LockedAsyncCheckpointIO",
         "--schedules", "200"],
    )
    assert fixed.exit_code == 0, fixed.output
