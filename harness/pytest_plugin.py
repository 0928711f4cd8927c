"""pytest plugin: ``@pytest.mark.racecheck(...)`` runs a test's body under ``racecheck.explore``.

Why a plugin at all: a flaky threaded test should become a deterministic one by adding a marker, not by rewriting
it around ``explore()``. pytest resolves the test's fixtures once; this plugin then calls the body once per
schedule, giving it a fresh ``tmp_path``/``tmpdir`` every time (same name, empty content, or a directory in the
fake store when ``fs=`` is set), so no schedule sees another's files and a replay starts from the same state.

On a failure the token is replayed once more with output capture reset just before, so the report carries the
shrunk trace, the exception with its traceback, only the failing schedule's output, and the exact command that
replays it. Everything else (strategies, shrinking, the fake filesystem) lives in the engine; this module only maps
pytest concepts (markers, options, fixtures, capture, reports) onto ``explore``/``replay``. Unmarked tests cost one
marker lookup. See docs/pytest_plugin.md for the precedence rules and the xdist / pytest-repeat behaviour.
"""

from __future__ import annotations

import inspect
import posixpath
import re
import shlex
import shutil
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import racecheck
from racecheck.config import FIELD_NAMES, STRATEGY_NAMES

__racecheck_engine__ = True  # never instrumented; trace locations skip these frames and point at the test

STRATEGIES = STRATEGY_NAMES
DEFAULTS = {"schedules": 1000, "strategy": "pct", "seed": 0}

# Every racecheck.Config field is a marker argument. schedules/strategy/seed are layered with the options; the
# rest go to explore() and, unchanged, to replay() (which ignores what does not affect one schedule).
MARKER_ARGS = FIELD_NAMES

_TMP_FIXTURES = ("tmp_path", "tmpdir")
_CAPTURE_FIXTURES = ("capsys", "capfd", "capsysbinary", "capfdbinary")
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
    parser.addini("racecheck_schedules", "default schedules per marked test", default=None)
    parser.addini("racecheck_strategy", f"default strategy for marked tests ({' | '.join(STRATEGIES)})", default=None)
    parser.addini("racecheck_seed", "default base seed for marked tests", default=None)


@dataclass
class _SessionState:
    """Options validated once, and totals gathered from reports (on the xdist controller too)."""

    schedules: int
    strategy: str
    seed: int
    replay: str | None
    tests: int = 0
    total_schedules: int = 0
    failures: int = 0
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
        return cli, f"--racecheck-{key}"
    ini = config.getini(f"racecheck_{key}")
    if ini not in (None, "", []):
        return ini, f"ini racecheck_{key}"
    return DEFAULTS[key], key


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
    token = config.getoption("racecheck_replay")
    if token is not None:
        from racecheck.search.tokens import decode

        try:
            decode(token)
        except racecheck.TokenError as exc:
            raise pytest.UsageError(f"racecheck: --racecheck-replay: {exc}") from None
        token = token.strip()
    state = _SessionState(schedules, strategy, seed, token)
    config.stash[_STATE] = state
    config.pluginmanager.register(_Summary(state), "racecheck-summary")


# ----- per-test settings -------------------------------------------------------------------------------------------


@dataclass
class _Settings:
    schedules: int
    strategy: str
    seed: int
    repetition: tuple[int, int] | None  # (1-based index, count) under pytest-repeat
    fs: Any
    shared: dict[str, Any]  # every other marker argument: keywords for both explore and replay


def _repetition(item: pytest.Function) -> tuple[int, int] | None:
    """pytest-repeat parametrizes with ``__pytest_repeat_step_number`` (0-based); the count is its option or mark."""
    callspec = getattr(item, "callspec", None)
    if callspec is None or "__pytest_repeat_step_number" not in callspec.params:
        return None
    step = int(callspec.params["__pytest_repeat_step_number"])
    mark = item.get_closest_marker("repeat")
    count = int(mark.args[0]) if mark is not None and mark.args else int(item.config.getoption("count", 1) or 1)
    return step + 1, max(count, step + 1)


def _bad_marker(item: pytest.Function, message: str) -> None:
    pytest.fail(f"racecheck marker on {item.name}: {message}", pytrace=False)


def _settings(item: pytest.Function, marker: pytest.Mark, state: _SessionState) -> _Settings:
    """The marker overrides command-line options, which override ini keys (docs/pytest_plugin.md says why)."""
    if marker.args:
        _bad_marker(item, f"takes keyword arguments only ({', '.join(MARKER_ARGS)})")
    unknown = sorted(set(marker.kwargs) - set(MARKER_ARGS))
    if unknown:
        _bad_marker(item, f"unknown argument {unknown[0]!r} (known: {', '.join(MARKER_ARGS)})")
    kw = marker.kwargs
    schedules = kw.get("schedules", state.schedules)
    if isinstance(schedules, bool) or not isinstance(schedules, int) or schedules < 1:
        _bad_marker(item, f"schedules must be an integer >= 1, got {schedules!r}")
    strategy = kw.get("strategy", state.strategy)
    if strategy not in STRATEGIES:
        _bad_marker(item, f"strategy must be one of {', '.join(STRATEGIES)}, got {strategy!r}")
    seed = kw.get("seed", state.seed)
    if isinstance(seed, bool) or not isinstance(seed, int):
        _bad_marker(item, f"seed must be an integer, got {seed!r}")
    repetition = _repetition(item)
    if repetition is not None:
        seed += repetition[0] - 1  # each repetition explores other schedules; independent of worker and order
    fs = kw.get("fs")
    if fs is not None:
        from racecheck.fakefs.spec import as_spec

        try:
            as_spec(fs)
        except (TypeError, ValueError) as exc:
            _bad_marker(item, f"fs: {exc}")
    shared = {name: value for name, value in kw.items() if name not in DEFAULTS}
    instrument = kw.get("instrument", ())
    if isinstance(instrument, (str, types.ModuleType)):
        instrument = [instrument]
    instrument = list(instrument)
    argnames = _argnames(item)
    if fs is not None and "tmpdir" in argnames:
        instrument.append(_legacy_path_module())  # so LocalPath's own os calls reach the fake store
    shared["instrument"] = instrument
    try:  # the engine's own checks (depth, max_steps, watchdog, ...), reported as one line
        racecheck.Config(strategy=strategy, schedules=schedules, seed=seed, **shared)
    except (TypeError, ValueError) as exc:
        _bad_marker(item, str(exc))
    return _Settings(schedules, strategy, seed, repetition, fs, shared)


def _legacy_path_module() -> str:
    from _pytest.compat import legacy_path

    return type(legacy_path(".")).__module__


def _argnames(item: pytest.Function) -> tuple[str, ...]:
    return tuple(item._fixtureinfo.argnames)


# ----- the body called once per schedule ---------------------------------------------------------------------------


def _safe_name(item: pytest.Function) -> str:
    """Deterministic directory name for the fake tmp_path (pytest's own rule: word characters, at most 30)."""
    return re.sub(r"[\W]", "_", item.name)[:30] or "test"


def _empty_real_dir(path: Path) -> None:
    for child in list(path.iterdir()) if path.exists() else ():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()
    path.mkdir(parents=True, exist_ok=True)


class _ScheduleBody:
    """The zero-argument function explore() calls once per schedule.

    It carries the test function's module, qualname and code so that the engine instruments the test module,
    hashes the token against the test (not against this plugin) and shows ``begin @test_file.py:LINE``.
    """

    def __init__(self, item: pytest.Function, settings: _Settings) -> None:
        function = item.obj
        self.__module__ = function.__module__
        self.__qualname__ = getattr(function, "__qualname__", function.__name__)
        self.__name__ = function.__name__
        self.__code__ = function.__code__
        self._function = function
        self._kwargs = {name: item.funcargs[name] for name in _argnames(item)}
        self._fake_tmp: str | None = None
        self._real_tmp: Path | None = None
        if any(name in self._kwargs for name in _TMP_FIXTURES):
            if settings.fs is not None:
                from racecheck.fakefs.spec import as_spec

                self._fake_tmp = posixpath.join(as_spec(settings.fs).root, "pytest", _safe_name(item))
            else:
                real = self._kwargs.get("tmp_path") or Path(str(self._kwargs["tmpdir"]))
                self._real_tmp = Path(real)

    def __call__(self) -> Any:
        kwargs = dict(self._kwargs)
        if self._fake_tmp is not None:
            from racecheck.fakefs import os_facade

            os_facade.makedirs(self._fake_tmp, exist_ok=True)  # a fresh store every schedule: always empty
            self._substitute_tmp(kwargs, Path(self._fake_tmp))
        elif self._real_tmp is not None:
            _empty_real_dir(self._real_tmp)  # same name every schedule, so a replay sees the same paths
        for name in _CAPTURE_FIXTURES:
            if name in kwargs:
                kwargs[name].readouterr()  # only this schedule's output is visible to the test
        if "caplog" in kwargs:
            kwargs["caplog"].clear()
        return self._function(**kwargs)

    @staticmethod
    def _substitute_tmp(kwargs: dict[str, Any], path: Path) -> None:
        if "tmp_path" in kwargs:
            kwargs["tmp_path"] = path
        if "tmpdir" in kwargs:
            from _pytest.compat import legacy_path

            kwargs["tmpdir"] = legacy_path(str(path))


# ----- running a marked test ---------------------------------------------------------------------------------------


def replay_command(item: pytest.Function, token: str) -> str:
    return f"pytest {shlex.quote(item.nodeid)} --racecheck-replay {token}"


def _discard_captured_output(config: pytest.Config) -> None:
    """Drop what the earlier schedules printed and logged, so the report keeps the failing schedule's only."""
    capman = config.pluginmanager.getplugin("capturemanager")
    if capman is not None and capman.is_globally_capturing():
        capman.read_global_capture()
    logging_plugin = config.pluginmanager.getplugin("logging-plugin")
    handler = getattr(logging_plugin, "report_handler", None)
    if handler is not None:
        handler.reset()


def _describe(settings: _Settings) -> str:
    text = f"{settings.strategy}, seed {settings.seed}"
    if settings.repetition is not None:
        text += f", repetition {settings.repetition[0]} of {settings.repetition[1]}"
    return text


def _raise(exc: BaseException, note: str) -> None:
    __tracebackhide__ = True
    if hasattr(exc, "add_note"):
        exc.add_note(note)
    raise exc


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    marker = pyfuncitem.get_closest_marker("racecheck")
    if marker is None:
        return None
    __tracebackhide__ = True
    if inspect.iscoroutinefunction(pyfuncitem.obj) or inspect.isasyncgenfunction(pyfuncitem.obj):
        _bad_marker(pyfuncitem, "async test functions are not supported (racecheck controls threads)")
    state = pyfuncitem.config.stash[_STATE]
    settings = _settings(pyfuncitem, marker, state)
    body = _ScheduleBody(pyfuncitem, settings)
    props = pyfuncitem.user_properties
    if state.replay is not None:
        _replay_marked(pyfuncitem, body, settings, state.replay)
        return True
    props.extend([("racecheck_strategy", settings.strategy), ("racecheck_seed", settings.seed)])
    if settings.repetition is not None:
        props.append(("racecheck_repetition", f"{settings.repetition[0]}/{settings.repetition[1]}"))
    result = racecheck.explore(body, strategy=settings.strategy, schedules=settings.schedules, seed=settings.seed,
                               **settings.shared)
    props.append(("racecheck_schedules", result.schedules))
    props.append(("racecheck_interleavings", result.interleavings))
    if result.exhausted:
        props.append(("racecheck_exhausted", result.exhausted_note))  # "exhausted: all N distinct schedules ..."
    if result.failure is None:
        return True
    failure = result.failure
    props.append(("racecheck_token", failure.token))
    _discard_captured_output(pyfuncitem.config)
    shown, remark = failure, ""
    try:
        again = racecheck.replay(body, failure.token, **settings.shared)
    except (racecheck.ReplayDivergence, racecheck.TokenError) as exc:
        remark = (f"note: replaying the token in this process did not take the same path (state shared across "
                  f"schedules through a fixture other than tmp_path/tmpdir?): {exc}")
    else:
        if again.failure is None:
            remark = ("note: replaying the token in this process passed; state shared across schedules "
                      "(a fixture other than tmp_path/tmpdir?) may have made the failure depend on earlier ones")
        else:
            shown = again.failure
            if again.failure.trace != failure.trace:
                remark = "note: the replay's trace differs from the exploration's (shown: the replay's)"
    header = (f"schedule #{failure.schedule_index}, after {result.schedules} schedules ({_describe(settings)}): "
              f"{failure.kind}{' in ' + failure.thread if failure.thread else ''}, "
              f"{failure.preemptions} preemptions (before shrinking {failure.original_preemptions}), "
              f"{failure.steps} steps")
    command = replay_command(pyfuncitem, failure.token)
    lines = [f"racecheck found a failing {header}", f"token: {failure.token}", f"replay: {command}"]
    if remark:
        lines.append(remark)
    pyfuncitem.stash[_SECTION] = "\n".join([*lines, "", shown.trace])
    _raise(shown.exception, "\n".join(lines[:3]))
    return True


def _replay_marked(item: pytest.Function, body: _ScheduleBody, settings: _Settings, token: str) -> None:
    __tracebackhide__ = True
    from racecheck.search.tokens import decode, short_hash

    item.user_properties.append(("racecheck_replay", token))
    try:
        result = racecheck.replay(body, token, **settings.shared)
    except racecheck.TokenError as exc:
        if decode(token).target != short_hash(f"{body.__module__}.{body.__qualname__}"):
            pytest.skip(f"--racecheck-replay: the token belongs to another test ({exc})")
        pytest.fail(f"--racecheck-replay: {exc}", pytrace=False)
    except racecheck.ReplayDivergence as exc:
        pytest.fail(f"racecheck: {exc}", pytrace=False)
    if result.failure is None:
        return
    failure = result.failure
    lines = [f"racecheck replayed schedule #{failure.schedule_index} ({failure.kind}"
             f"{' in ' + failure.thread if failure.thread else ''}, {failure.preemptions} preemptions, "
             f"{failure.steps} steps)", f"token: {token}", f"replay: {replay_command(item, token)}"]
    item.stash[_SECTION] = "\n".join([*lines, "", failure.trace])
    _raise(failure.exception, "\n".join(lines))


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
        pytest.fail("the racefs fixture needs @pytest.mark.racecheck(fs='posix'|'windows'|FakeFS(...))",
                    pytrace=False)
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
        replayed = "racecheck_replay" in props
        if "racecheck_schedules" not in props and not replayed:
            return
        state = self.state
        state.tests += 1
        state.total_schedules += int(props.get("racecheck_schedules", 1))
        state.failures += int(report.failed)
        if replayed:
            detail = "replay"
        else:
            detail = (f"{props['racecheck_schedules']} schedules, {props.get('racecheck_interleavings', 0)} "
                      f"interleavings ({props.get('racecheck_strategy')}, seed {props.get('racecheck_seed')}")
            if "racecheck_repetition" in props:
                detail += f", repetition {props['racecheck_repetition']}"
            exhausted = props.get("racecheck_exhausted")
            detail += f"; {exhausted})" if exhausted else ")"
        token = props.get("racecheck_token")
        outcome = "FAILED" if report.failed else report.outcome
        state.lines.append(f"{report.nodeid}: {detail} {outcome}" + (f" token {token}" if token else ""))

    def pytest_terminal_summary(self, terminalreporter: Any, config: pytest.Config) -> None:
        state = self.state
        if state.tests == 0 or hasattr(config, "workerinput"):
            return  # nothing marked ran, or an xdist worker (the controller prints the summary)
        terminalreporter.section("racecheck")
        for line in sorted(state.lines):  # per test: schedules, interleavings, exhaustion, outcome, token
            terminalreporter.write_line(line)
        terminalreporter.write_line(
            f"racecheck: {state.tests} marked test{'s' if state.tests != 1 else ''}, "
            f"{state.total_schedules} schedule{'s' if state.total_schedules != 1 else ''}, {state.failures} failing"
        )
