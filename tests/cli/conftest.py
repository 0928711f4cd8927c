"""Fixtures for the CLI tests: the Lightning-free stub catalogue, in this process and in every child process."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


@pytest.fixture
def stub(monkeypatch):
    """Select the stub catalogue (RACECHECK_CATALOGUE), reachable by spawned workers and gateways (PYTHONPATH)."""
    monkeypatch.setenv("RACECHECK_CATALOGUE", "cli_stub_catalogue")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    if str(HERE) not in sys.path:
        monkeypatch.syspath_prepend(str(HERE))
    return HERE
