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


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    """Test classes with ``racecheck_explore = FakeFS(...)`` run their body inside ``racecheck.explore``: the
    standalone store the fixtures prepared is carried into the run's store, and back out for their teardown."""
    spec = getattr(pyfuncitem.cls, "racecheck_explore", None)
    if spec is None:
        return None
    import racecheck
    from racecheck.fakefs import mount

    function = pyfuncitem.obj
    args = {name: pyfuncitem.funcargs[name] for name in pyfuncitem._fixtureinfo.argnames}
    before = mount.default_store()
    box = {}

    def body():
        store = mount.current_store()
        store.adopt(before)
        box["store"] = store
        function(**args)

    result = racecheck.explore(body, fs=spec, schedules=1, shrink_budget=0)
    if "store" in box:
        mount.install_default_store(box["store"])
    if not result.ok:
        raise result.failure.exception or AssertionError(str(result.failure))
    return True
