"""Fixtures for the fake filesystem tests (the FakeRun helper lives in fakerun_helpers.py)."""

from __future__ import annotations

import pytest
from fakerun_helpers import bound_run


@pytest.fixture
def posix_run():
    with bound_run("posix") as run:
        yield run


@pytest.fixture
def windows_run():
    with bound_run("windows") as run:
        yield run
