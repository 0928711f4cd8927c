"""Helpers shared by the CLI tests."""

from __future__ import annotations

import os
import subprocess
import sys

from click.testing import CliRunner
from racecheck.frontends.cli import main


def invoke(*args: str):
    """Run the CLI in this process; returns click's Result (exit_code, stdout, stderr)."""
    return CliRunner().invoke(main, list(args))


def racecheck_subprocess(*args: str, env: dict | None = None, timeout: int = 300) -> subprocess.CompletedProcess:
    """Run the CLI as a user does, in a fresh interpreter."""
    return subprocess.run(
        [sys.executable, "-m", "racecheck", *args],
        capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})},
    )


def one_error_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert lines[0].startswith("racecheck: error: "), stderr
    assert "Traceback" not in stderr
    return lines[0]
