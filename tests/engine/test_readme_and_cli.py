"""What a new user does first: the README example, and the CLI's answers to bad input (one line, exit 2)."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from racecheck.frontends.cli import main

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
        (["run", "delete-while-queued", "--target", "os:path"], "neither a CheckpointIO class nor a factory"),
        (["run", "delete-while-queued", "--target", "nocolon"], "must look like 'package.module:ClassName'"),
        (["run", "evict-before-commit", "--fs", "real"], "does not run under --fs real"),
        (["replay", "rcc1.not.a.token"], "malformed token"),
        (["replay", "banana"], "not a racecheck CLI token"),
        (["gate", "--baseline", "no/such/baseline.json"], "cannot read baseline"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, message):
    pytest.importorskip("lightning")
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and message in lines[0] and lines[0].startswith("racecheck: error:")
    assert result.stdout == "" and "Traceback" not in result.output


def _block(output: str) -> str:
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if "RACE" in line) + 1
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("-> "))
    return "\n".join(lines[start : end + 1])


@pytest.mark.parametrize("fs", ["posix", "windows"])
def test_cli_finds_the_race_on_stock_and_replays_it_in_another_process(fs):
    pytest.importorskip("lightning")
    found = CliRunner().invoke(main, ["run", "delete-while-queued", "--fs", fs, "--schedules", "20"])
    assert found.exit_code == 1, found.output
    assert "fs.rename" in found.stdout  # file operations are scheduling points in the trace
    token = re.search(r"racecheck replay (rcc1\.\S+)", found.stdout).group(1)
    if fs == "posix":  # in a fresh interpreter with another hash seed
        env = dict(os.environ, PYTHONHASHSEED="777")
        again = subprocess.run([sys.executable, "-m", "racecheck", "replay", token], capture_output=True,
                               text=True, env=env, timeout=300)
        code, stdout = again.returncode, again.stdout
    else:  # in this process
        again = CliRunner().invoke(main, ["replay", token])
        code, stdout = again.exit_code, again.stdout
    assert code == 1, stdout
    assert "leaked checkpoint" in stdout
    assert _block(stdout) == _block(found.stdout)


def test_fixed_io_is_clean_on_both_semantics():
    pytest.importorskip("lightning")
    fixed = CliRunner().invoke(
        main,
        ["run", "delete-while-queued", "--target", "racecheck.fixed_impl:LockedAsyncCheckpointIO",
         "--schedules", "50", "--strategy", "random"],
    )
    assert fixed.exit_code == 0, fixed.output
    assert "[posix]" in fixed.stdout and "[windows]" in fixed.stdout and "0 races found" in fixed.stdout


@pytest.mark.slow
def test_demo_is_the_readme_main_job():
    pytest.importorskip("lightning")
    out = subprocess.run([sys.executable, "-m", "racecheck", "demo"], capture_output=True, text=True,
                         timeout=1800)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert out.stdout.count("identical trace") == 2 and "demo: OK" in out.stdout
    assert "the seed report's error, reproduced: PermissionError: [WinError 32]" in out.stdout
    assert out.stdout.count("exhausted: all 79 classes of equivalent interleavings explored") == 2  # the dpor proof
