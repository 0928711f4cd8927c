"""racecheck's own failures are its own: an exception in a strategy (its chooser at a decision, or its bookkeeping
between schedules) or a divergence inside the partial-order search's replay is ``racecheck.InternalError`` with the
original traceback, raised by ``explore``; the CLI exits 3 and prints it, the pytest plugin counts it as an error.
Never a failure of the code under test, never "uncontrolled blocking"."""

from __future__ import annotations

import sys
import textwrap
import threading
from pathlib import Path

import pytest
import racecheck
from racecheck.errors import InternalError
from racecheck.runtime.chooser import Chooser
from racecheck.search import dpor, pct, pos, random_walk

HERE = Path(__file__).resolve().parent
pytest_plugins = ("pytester",)


class StrategyBug(Exception):
    """What the injected strategy bug raises."""


def _boom(*args, **kwargs):
    raise StrategyBug("injected strategy bug")


def _choosers(module):
    return [value for value in vars(module).values()
            if isinstance(value, type) and issubclass(value, Chooser) and value is not Chooser]


def _two_threads():
    state = {"n": 0}

    def bump():
        state["n"] += 1

    threads = [threading.Thread(target=bump) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


@pytest.mark.parametrize("strategy,module", [("random", random_walk), ("pct", pct), ("pos", pos), ("dpor", dpor)])
def test_a_chooser_that_raises_is_racechecks_error(monkeypatch, strategy, module):
    for chooser in _choosers(module):
        monkeypatch.setattr(chooser, "pick_thread", _boom)
    with pytest.raises(InternalError) as caught:
        racecheck.explore(_two_threads, strategy=strategy, schedules=5)
    error = caught.value
    assert "internal error" in str(error) and "not in the code under test" in str(error)
    assert "StrategyBug: injected strategy bug" in error.summary
    assert "Traceback" in error.traceback and "_boom" in error.traceback  # the original traceback, as text
    assert isinstance(error, racecheck.RacecheckError)


def test_a_strategy_that_raises_between_schedules_is_racechecks_error(monkeypatch):
    monkeypatch.setattr(dpor.DPOR, "new_execution", _boom)
    with pytest.raises(InternalError, match="StrategyBug: injected strategy bug") as caught:
        racecheck.explore(_two_threads, strategy="dpor", schedules=5)
    assert "new_execution" in caught.value.traceback


def test_a_divergence_inside_dpors_replay_is_racechecks_error(monkeypatch):
    """The partial-order search replays its own prefixes; one that goes astray is the search's failure, not a
    verdict on the program, and never uncontrolled blocking."""
    monkeypatch.setattr(dpor.DPORChooser, "_replayed", lambda self, kind, options: self._diverged())
    with pytest.raises(InternalError, match="partial-order search diverged") as caught:
        racecheck.explore(_two_threads, strategy="dpor", schedules=5)
    assert "uncontrolled" not in str(caught.value)


def test_the_program_failing_is_still_the_programs_failure():
    """The error path is for racecheck's own code only: an exception of the test function stays a finding."""

    def fails():
        raise ValueError("the program's own bug")

    result = racecheck.explore(fails, strategy="random", schedules=2)
    assert not result.ok and isinstance(result.failure.exception, ValueError)


def test_the_cli_exits_3_with_the_traceback(monkeypatch, stub_catalogue):
    from click.testing import CliRunner
    from racecheck.frontends.cli import main

    for chooser in _choosers(random_walk):
        monkeypatch.setattr(chooser, "pick_thread", _boom)
    out = CliRunner().invoke(main, ["run", "lost-update", "--strategy", "random", "--schedules", "3"])
    assert out.exit_code == 3, out.output
    assert "internal error" in out.stderr and "StrategyBug: injected strategy bug" in out.stderr
    assert "Traceback" in out.stderr and "RACE FOUND" not in out.stdout


@pytest.fixture
def stub_catalogue(monkeypatch):
    """The CLI tests' Lightning-free catalogue (tests/cli/cli_stub_catalogue.py)."""
    cli = str(HERE.parent / "cli")
    monkeypatch.setenv("RACECHECK_CATALOGUE", "cli_stub_catalogue")
    if cli not in sys.path:
        monkeypatch.syspath_prepend(cli)


PLUGIN_TESTS = textwrap.dedent(
    """
    import threading
    import pytest
    from racecheck.search import random_walk
    from racecheck.runtime.chooser import Chooser

    @pytest.fixture(autouse=True)
    def strategy_bug(monkeypatch):
        def boom(*args, **kwargs):
            raise ZeroDivisionError("injected strategy bug")
        for value in vars(random_walk).values():
            if isinstance(value, type) and issubclass(value, Chooser) and value is not Chooser:
                monkeypatch.setattr(value, "pick_thread", boom)

    @pytest.mark.racecheck(strategy="random", schedules=3)
    def test_two_threads():
        threads = [threading.Thread(target=lambda: None) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    """
)


def test_the_plugin_reports_an_error_not_a_failure(pytester):
    pytester.makepyfile(test_bug=PLUGIN_TESTS)
    result = pytester.runpytest("-p", "no:randomly", "-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    out = result.stdout.str()
    assert "InternalError" in out and "injected strategy bug" in out
