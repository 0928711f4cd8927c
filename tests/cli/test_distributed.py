"""Exploration beyond one process: execnet gateways (`--tx`), tested locally with popen gateways. The answer is
the same as in one process because the partitioning, not the worker, decides what each schedule is."""

from __future__ import annotations

import re
import sys

import pytest
from cli_helpers import invoke, one_error_line, racecheck_subprocess

pytest.importorskip("execnet")


def _cells(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if "RACE FOUND" in line or "replay with" in line or "clean" in line]


def test_popen_gateways_find_the_same_failures_as_one_process(stub):
    args = ["run", "rare-order", "lost-update", "--schedules", "400", "-q"]
    local = invoke(*args)
    remote = racecheck_subprocess(*args, "--tx", "popen", "--tx", f"popen//python={sys.executable}")
    assert local.exit_code == remote.returncode == 1, remote.stderr
    assert _cells(local.stdout) == _cells(remote.stdout)
    assert [int(i) for i in re.findall(r"schedule #(\d+)", remote.stdout)][0] >= 25  # beyond the first chunk


def test_unusable_gateway_is_one_line_exit_2(stub):
    out = racecheck_subprocess("run", "lost-update", "--tx", "popen//python=/nonexistent/python", "-q")
    assert out.returncode == 2 and out.stdout == ""
    assert "cannot start the gateway" in one_error_line(out.stderr)
