"""pytest plugin: ``@pytest.mark.racecheck(...)`` runs a test's body under ``racecheck.explore``.

Why a plugin at all: a flaky threaded test should become a deterministic one by adding a marker, not by rewriting
it around ``explore()``. pytest resolves the test's fixtures once; the plugin then calls the body once per
schedule, giving it a fresh ``tmp_path``/``tmpdir`` every time (same name, empty content, or a directory in the
fake store when ``fs=`` is set), so no schedule sees another's files and a replay starts from the same state.

On a failure the token is replayed once more with output capture reset just before, so the report carries the
shrunk trace, the exception with its traceback, only the failing schedule's output, and the exact command that
replays it. Everything else (strategies, shrinking, the fake filesystem) lives in the engine; the plugin only maps
pytest concepts (markers, options, fixtures, capture, reports) onto ``explore``/``replay``. See
docs/pytest_plugin.md for the precedence rules and the xdist / pytest-repeat behaviour.

This module is the entry point (pytest11 ``racecheck``, so ``-p no:racecheck`` disables it) and what every pytest
session pays for: options, ini keys, the marker, the ``racefs`` fixture and the hooks, which cost an unmarked test
one marker lookup. It imports only the strategy names: the engine side lives in
:mod:`racecheck.frontends.pytest_runner`, imported at the first marked test, and the texts of the summary in
:mod:`racecheck.frontends.pytest_report`, imported at the first report of a marked test.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from racecheck.search.registry import DEFAULT_STRATEGY, STRATEGY_NAMES

__racecheck_engine__ = True  # never instrumented; trace locations skip these frames and point at the test

STRATEGIES = STRATEGY_NAMES
DEFAULTS = {"schedules": 1000, "strategy": DEFAULT_STRATEGY, "seed": 0, "max_failures": 1, "progress": "auto"}
PROGRESS_MODES = ("auto", "on", "off")
FS_CHOICES = ("posix", "windows")

_STATE = pytest.StashKey["_SessionState"]()
_SECTION = pytest.StashKey["str"]()

SECTION_TITLE = "racecheck: failing schedule"


# ----- options -----------------------------------------------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("racecheck", "racecheck: deterministic thread-race exploration of marked tests")
    group.addoption("--racecheck-schedules", dest="racecheck_schedules", default=None, metavar="N",
                    help="schedules per marked test (default: ini racecheck_schedules, else 1000); "
                         "a marker's schedules= wins")
    group.addoption("--racecheck-strategy", dest="racecheck_strategy", default=None, metavar="NAME",
                    help=f"{' | '.join(STRATEGIES)} (default: ini racecheck_strategy, else pct); "
                         "a marker's strategy= wins")
    group.addoption("--racecheck-seed", dest="racecheck_seed", default=None, metavar="S",
                    help="base seed (default: ini racecheck_seed, else 0); a marker's seed= wins; "
                         "pytest-repeat adds the repetition index")
    group.addoption("--racecheck-replay", dest="racecheck_replay", default=None, metavar="TOKEN",
                    help="replay exactly this schedule in the selected marked test instead of exploring")
    group.addoption("--racecheck-max-failures", dest="racecheck_max_failures", default=None, metavar="N",
                    help="keep exploring until N distinct failures are found and report each (default: ini "
                         "racecheck_max_failures, else 1); a marker's max_failures= wins")
    group.addoption("--racecheck", dest="racecheck_all", action="store_true", default=False,
                    help="explore every selected test as if it carried @pytest.mark.racecheck (unedited test files)")
    group.addoption("--racecheck-fs", dest="racecheck_fs", default=None, metavar="posix|windows",
                    help="a fresh fake filesystem of these semantics for every schedule (tmp_path inside it), for "
                         "every explored test whose marker does not say fs=")
    group.addoption("--racecheck-instrument", dest="racecheck_instrument", action="append", default=[],
                    metavar="MOD", help="also control this module's threads, locks, queues and time (repeatable)")
    group.addoption("--racecheck-no-memory", dest="racecheck_no_memory", action="store_true", default=False,
                    help="plain memory accesses are no scheduling points (memory=False) in every explored test "
                         "whose marker does not say memory=")
    group.addoption("--racecheck-data-races", dest="racecheck_data_races", default="report",
                    metavar="report|fail|ignore",
                    help="unordered conflicting accesses: report them (default), fail the test where one shows, or "
                         "ignore them, in every explored test whose marker does not say data_races=")
    group.addoption("--racecheck-progress", dest="racecheck_progress", action="store_const", const="on",
                    default=None, help="a live line per explored test (schedules, interleavings, schedules/s, "
                    "failures so far) even when stdout is not a terminal (default: ini racecheck_progress, else "
                    "auto: on a terminal only)")
    group.addoption("--racecheck-no-progress", dest="racecheck_progress", action="store_const", const="off",
                    help="no live line, not even on a terminal")
    parser.addini("racecheck_schedules", "default schedules per marked test", default=None)
    parser.addini("racecheck_strategy", f"default strategy for marked tests ({' | '.join(STRATEGIES)})", default=None)
    parser.addini("racecheck_seed", "default base seed for marked tests", default=None)
    parser.addini("racecheck_max_failures", "default distinct failures to find per marked test", default=None)
    parser.addini("racecheck_progress", "live line per explored test: auto (on a terminal) | on | off", default=None)


@dataclass
class _SessionState:
    """Options validated once, and totals gathered from reports (on the xdist controller too)."""

    schedules: int
    strategy: str
    seed: int
    replay: str | None
    max_failures: int = 1
    every_test: bool = False  # --racecheck: unmarked tests are explored too
    fs: str | None = None  # --racecheck-fs
    instrument: tuple[str, ...] = ()  # --racecheck-instrument
    memory: bool = True  # not --racecheck-no-memory
    data_races: str = "report"  # --racecheck-data-races
    replay_problem: str | None = None  # the token was recorded for none of the selected tests (an xdist worker's)
    progress: str = "auto"  # a live line per explored test: auto | on | off (--racecheck-progress)
    tests: int = 0
    total_schedules: int = 0
    failures: int = 0
    replays: int = 0
    lines: list[str] = field(default_factory=list)


def _int_setting(value: Any, name: str, minimum: int | None = None) -> int:
    try:
        number = int(str(value).strip())
    except ValueError:
        raise pytest.UsageError(f"racecheck: {name} must be an integer, got {value!r}") from None
    if minimum is not None and number < minimum:
        raise pytest.UsageError(f"racecheck: {name} must be >= {minimum}, got {number}")
    return number


def _layered(config: pytest.Config, key: str) -> tuple[Any, str]:
    """Command line over ini over the built-in default; returns the value and where it came from."""
    cli = config.getoption(f"racecheck_{key}")
    if cli is not None:
        return cli, f"--racecheck-{key.replace('_', '-')}"
    ini = config.getini(f"racecheck_{key}")
    if ini not in (None, "", []):
        return ini, f"ini racecheck_{key}"
    return DEFAULTS[key], key


def _checked_token(token: str) -> str:
    """A ``--racecheck-replay`` token, decoded once here so a bad one is a usage error before any test runs."""
    from racecheck.errors import TokenError
    from racecheck.search.tokens import decode

    try:
        decode(token)
    except TokenError as exc:
        raise pytest.UsageError(f"racecheck: --racecheck-replay: {exc}") from None
    return token.strip()


def _checked_module(name: str) -> str:
    """A ``--racecheck-instrument`` module, found (not imported) here so a typo is a usage error up front."""
    import importlib.util

    name = str(name).strip()
    try:
        found = importlib.util.find_spec(name) if name else None
    except (ImportError, ValueError):
        found = None
    if found is None:
        raise pytest.UsageError(f"racecheck: --racecheck-instrument: no module named {name!r}")
    return name


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "racecheck(schedules=, strategy=, seed=, fs=, instrument=[...], ...): run the test body under "
        "racecheck.explore, one call per schedule, with a fresh tmp_path/tmpdir each time",
    )
    schedules, where = _layered(config, "schedules")
    schedules = _int_setting(schedules, where, minimum=1)
    strategy, where = _layered(config, "strategy")
    strategy = str(strategy).strip()
    if strategy not in STRATEGIES:
        raise pytest.UsageError(f"racecheck: {where} must be one of {', '.join(STRATEGIES)}, got {strategy!r}")
    seed, where = _layered(config, "seed")
    seed = _int_setting(seed, where)
    max_failures, where = _layered(config, "max_failures")
    max_failures = _int_setting(max_failures, where, minimum=1)
    token = config.getoption("racecheck_replay")
    if token is not None:
        token = _checked_token(token)
    fs = config.getoption("racecheck_fs")
    if fs is not None and fs not in FS_CHOICES:
        raise pytest.UsageError(f"racecheck: --racecheck-fs must be one of {', '.join(FS_CHOICES)}, got {fs!r}")
    instrument = tuple(_checked_module(name) for name in config.getoption("racecheck_instrument") or ())
    progress, where = _layered(config, "progress")
    progress = str(progress).strip()
    if progress not in PROGRESS_MODES:
        raise pytest.UsageError(f"racecheck: {where} must be one of {', '.join(PROGRESS_MODES)}, got {progress!r}")
    state = _SessionState(schedules, strategy, seed, token, max_failures, bool(config.getoption("racecheck_all")),
                          fs, instrument, not config.getoption("racecheck_no_memory"), progress=progress)
    state.data_races = str(config.getoption("racecheck_data_races"))
    if state.data_races not in ("report", "fail", "ignore"):
        raise pytest.UsageError(f"racecheck: --racecheck-data-races must be report, fail or ignore, got "
                                f"{state.data_races!r}")
    config.stash[_STATE] = state
    config.pluginmanager.register(_Summary(state), "racecheck-summary")


# ----- running a marked test ---------------------------------------------------------------------------------------


def pytest_collection_finish(session: pytest.Session) -> None:
    """A ``--racecheck-replay`` token recorded for none of the selected tests is a usage error naming its test; in a
    pytest-xdist worker, where a usage error would crash the run, every explored test fails with that line instead."""
    state = session.config.stash[_STATE]
    if state.replay is not None and session.items:
        from racecheck.frontends import pytest_runner

        problem = pytest_runner.replay_owner_problem(session.items, state.replay)
        if problem is not None and not hasattr(session.config, "workerinput"):
            raise pytest.UsageError(problem)
        state.replay_problem = problem


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    marker = pyfuncitem.get_closest_marker("racecheck")
    state = pyfuncitem.config.stash[_STATE]
    if marker is None:
        if not state.every_test or _is_async(pyfuncitem.obj):
            return None  # with --racecheck an async test still runs plainly: racecheck controls threads
        marker = pytest.mark.racecheck.mark  # --racecheck: as if the test carried a bare marker
    __tracebackhide__ = True
    from racecheck.errors import InternalError
    from racecheck.frontends import pytest_runner  # the engine loads here, at the first marked test

    try:
        pytest_runner.run_marked(pyfuncitem, marker, state, _SECTION)
    except InternalError as exc:  # racecheck's own failure: reported as an error of the run, not the test's
        pyfuncitem.user_properties.append((INTERNAL_ERROR, exc.summary))
        raise
    return True


INTERNAL_ERROR = "racecheck_internal_error"  # the user property that marks a report racecheck's own error


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> Any:
    """A test whose exploration hit racecheck's internal error is counted and shown as an error (``E``), never as
    a failure of the code under test."""
    if report.when == "call" and report.failed and any(key == INTERNAL_ERROR for key, _ in report.user_properties):
        return "error", "E", ("ERROR", {"red": True})
    return None


def _is_async(function: Any) -> bool:
    import inspect

    return inspect.iscoroutinefunction(function) or inspect.isasyncgenfunction(function)


# ----- fixtures ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RaceFS:
    """The fake store as a marked test sees it: ``root`` for os-level code, ``url`` for fsspec (same store)."""

    root: str
    url: str

    @property
    def path(self) -> Path:
        return Path(self.root)

    def store(self) -> Any:
        """The current schedule's store (files(), open handles, operation log); call it inside the test body."""
        from racecheck.fakefs import current_store

        return current_store()


@pytest.fixture
def racefs(request: pytest.FixtureRequest) -> RaceFS:
    """The fake filesystem's mount root and ``racefs://`` url, for a test marked ``racecheck(fs=...)``."""
    marker = request.node.get_closest_marker("racecheck")
    fs = marker.kwargs.get("fs") if marker is not None else None
    if fs is None:
        state = request.config.stash[_STATE]
        if marker is not None or state.every_test:
            fs = state.fs
    if fs is None:
        pytest.fail("the racefs fixture needs @pytest.mark.racecheck(fs='posix'|'windows'|FakeFS(...)) or "
                    "--racecheck-fs", pytrace=False)
    from racecheck.fakefs.spec import as_spec

    root = as_spec(fs).root
    return RaceFS(root=root, url="racefs://" + root)


# ----- reports -----------------------------------------------------------------------------------------------------


@pytest.hookimpl(hookwrapper=True)  # old-style wrapper: works with every pytest the plugin may be loaded into
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Any:
    outcome = yield
    if call.when == "call":
        section = item.stash.get(_SECTION, None)
        if section is not None:
            outcome.get_result().sections.append((SECTION_TITLE, section))


class _Summary:
    """Totals for the terminal summary, gathered from reports' user_properties: this runs on the xdist controller
    too, so ``-n N`` prints the same totals as a serial run."""

    def __init__(self, state: _SessionState) -> None:
        self.state = state

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "call":
            return
        props = dict(report.user_properties)
        if "racecheck_schedules" not in props and "racecheck_replay" not in props:
            return
        from racecheck.frontends.pytest_report import summary_line

        state = self.state
        state.tests += 1
        state.total_schedules += int(props.get("racecheck_schedules", 1))
        state.failures += int(report.failed)
        state.replays += int("racecheck_replay" in props)
        state.lines.append(summary_line(report.nodeid, props, report.failed, report.outcome))

    def pytest_terminal_summary(self, terminalreporter: Any, config: pytest.Config) -> None:
        state = self.state
        if state.tests == 0 or hasattr(config, "workerinput"):
            return  # nothing marked ran, or an xdist worker (the controller prints the summary)
        from racecheck.frontends.pytest_report import totals_line

        terminalreporter.section("racecheck")
        for line in sorted(state.lines):  # per test: schedules, interleavings, exhaustion, outcome, token
            terminalreporter.write_line(line)
        terminalreporter.write_line(totals_line(state.tests, state.total_schedules, state.failures, state.replays))
