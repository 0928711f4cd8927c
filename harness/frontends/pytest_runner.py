"""The pytest plugin's engine side: what a test marked ``@pytest.mark.racecheck(...)`` runs.

:mod:`racecheck.pytest_plugin` imports this module at the first marked test, so a session without one never loads
the engine. It reads the marker over the session's options (:func:`settings`), builds the zero-argument body
``explore`` calls once per schedule (:class:`ScheduleBody`: fresh ``tmp_path``/``tmpdir``, capture reset), explores
or replays (:func:`run_marked`), and on a failure replays the token once more so the report section carries the
shrunk trace and only the failing schedule's output.
"""

from __future__ import annotations

import inspect
import posixpath
import re
import shutil
import sys
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from racecheck.api import explore, replay
from racecheck.config import FIELD_NAMES, Config
from racecheck.control.tempdirs import DIRECTORY
from racecheck.errors import ForeignTokenError, ReplayDivergence, TokenError
from racecheck.frontends import pytest_report
from racecheck.search.data_races import race_lines
from racecheck.search.registry import STRATEGY_NAMES
from racecheck.search.tokens import decode, owner_in, target_of

__racecheck_engine__ = True  # never instrumented; trace locations skip these frames and point at the test

# Every racecheck.Config field is a marker argument. schedules/strategy/seed are layered with the options; the
# rest go to explore() and, unchanged, to replay() (which ignores what does not affect one schedule).
MARKER_ARGS = FIELD_NAMES
LAYERED = ("schedules", "strategy", "seed")

_TMP_FIXTURES = ("tmp_path", "tmpdir")
_CAPTURE_FIXTURES = ("capsys", "capfd", "capsysbinary", "capfdbinary")


# ----- per-test settings -------------------------------------------------------------------------------------------


@dataclass
class Settings:
    schedules: int
    strategy: str
    seed: int
    repetition: tuple[int, int] | None  # (1-based index, count) under pytest-repeat
    fs: Any
    shared: dict[str, Any]  # every other marker argument: keywords for both explore and replay
    replay_args: tuple[str, ...] = ()  # the options a replay command needs besides the token (--racecheck, ...)


def _repetition(item: pytest.Function) -> tuple[int, int] | None:
    """pytest-repeat parametrizes with ``__pytest_repeat_step_number`` (0-based); the count is its option or mark."""
    callspec = getattr(item, "callspec", None)
    if callspec is None or "__pytest_repeat_step_number" not in callspec.params:
        return None
    step = int(callspec.params["__pytest_repeat_step_number"])
    mark = item.get_closest_marker("repeat")
    count = int(mark.args[0]) if mark is not None and mark.args else int(item.config.getoption("count", 1) or 1)
    return step + 1, max(count, step + 1)


def bad_marker(item: pytest.Function, message: str) -> None:
    """Fail the test with one line naming the marker's problem."""
    pytest.fail(f"racecheck marker on {item.name}: {message}", pytrace=False)


def settings(item: pytest.Function, marker: pytest.Mark, session: Any) -> Settings:
    """The marker overrides command-line options, which override ini keys (docs/pytest_plugin.md says why).
    ``session`` holds the options' values (schedules, strategy, seed), validated once per session."""
    if marker.args:
        bad_marker(item, f"takes keyword arguments only ({', '.join(MARKER_ARGS)})")
    unknown = sorted(set(marker.kwargs) - set(MARKER_ARGS))
    if unknown:
        bad_marker(item, f"unknown argument {unknown[0]!r} (known: {', '.join(MARKER_ARGS)})")
    kw = marker.kwargs
    schedules = kw.get("schedules", session.schedules)
    if isinstance(schedules, bool) or not isinstance(schedules, int) or schedules < 1:
        bad_marker(item, f"schedules must be an integer >= 1, got {schedules!r}")
    strategy = kw.get("strategy", session.strategy)
    if strategy not in STRATEGY_NAMES:
        bad_marker(item, f"strategy must be one of {', '.join(STRATEGY_NAMES)}, got {strategy!r}")
    seed = kw.get("seed", session.seed)
    if isinstance(seed, bool) or not isinstance(seed, int):
        bad_marker(item, f"seed must be an integer, got {seed!r}")
    repetition = _repetition(item)
    if repetition is not None:
        seed += repetition[0] - 1  # each repetition explores other schedules; independent of worker and order
    fs = kw.get("fs", session.fs)  # --racecheck-fs fills in what the marker leaves out (Config checks it)
    shared = {name: value for name, value in kw.items() if name not in LAYERED}
    if fs is not None:
        shared["fs"] = fs
    shared.setdefault("max_failures", session.max_failures)
    if not session.memory:
        shared.setdefault("memory", False)  # --racecheck-no-memory; a marker's memory= wins
    if session.data_races != "report":
        shared.setdefault("data_races", session.data_races)  # --racecheck-data-races; a marker's wins
    instrument = kw.get("instrument", ())
    if isinstance(instrument, (str, types.ModuleType)):
        instrument = [instrument]
    instrument = [*instrument, *session.instrument]
    if fs is not None and "tmpdir" in _argnames(item):
        instrument.append(_legacy_path_module())  # so LocalPath's own os calls reach the fake store
    shared["instrument"] = instrument
    problem = ""
    try:  # the engine's own checks (fs, depth, max_steps, watchdog, ...), reported as one line
        Config(strategy=strategy, schedules=schedules, seed=seed, **shared)
    except (TypeError, ValueError) as exc:
        problem = str(exc)
    if problem:  # outside the handler: the failure is the one line, with no exception chained to it
        bad_marker(item, problem)
    return Settings(schedules, strategy, seed, repetition, fs, shared, _replay_args(item, kw, session))


def _replay_args(item: pytest.Function, kw: dict[str, Any], session: Any) -> tuple[str, ...]:
    """What a replay of this test needs on the command line besides its node id and token: ``--racecheck`` for a
    test explored without a marker, and the ``--racecheck-fs``/``--racecheck-instrument`` options it used."""
    args: list[str] = []
    if item.get_closest_marker("racecheck") is None:
        args.append("--racecheck")
    if "fs" not in kw and session.fs is not None:
        args += ["--racecheck-fs", session.fs]
    for name in session.instrument:
        args += ["--racecheck-instrument", name]
    return tuple(args)


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


class ScheduleBody:
    """The zero-argument function explore() calls once per schedule.

    It carries the test function's module, qualname and code so that the engine instruments the test module,
    hashes the token against the test (not against this plugin) and shows ``begin @test_file.py:LINE``.
    """

    def __init__(self, item: pytest.Function, settings: Settings) -> None:
        function = item.obj
        self.__module__ = function.__module__
        self.__qualname__ = getattr(function, "__qualname__", function.__name__)
        self.__name__ = function.__name__
        self.__code__ = function.__code__
        self._function = function
        self.__wrapped__ = function  # what memory watching reaches first, as explore() reaches a test function
        self._kwargs = {name: item.funcargs[name] for name in _argnames(item)}
        self._config = item.config
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
        # Only the last run's output is kept: a replay's own warm-up and reruns (memory watching) print too.
        _discard_captured_output(self._config)
        kwargs = dict(self._kwargs)
        if self._fake_tmp is not None:
            from racecheck.fakefs import os_facade

            os_facade.makedirs(self._fake_tmp, exist_ok=True)  # a fresh store every schedule: always empty
            self._substitute_tmp(kwargs, Path(self._fake_tmp))
        elif self._real_tmp is not None:
            from racecheck.fakefs.realdisk import alias, unwatched

            with unwatched():  # the plugin's housekeeping, not the test's file operations
                _empty_real_dir(self._real_tmp)  # same name every schedule, so a replay sees the same paths
            # named $TMP1 in traces, as the first temporary directory a test makes under explore(): pytest numbers
            # its base directory per session (pytest-3, pytest-4), and a replay in the next session must read alike
            alias(DIRECTORY, str(self._real_tmp))
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


def _discard_captured_output(config: pytest.Config) -> None:
    """Drop what the earlier schedules printed and logged, so the report keeps the failing schedule's only."""
    capman = config.pluginmanager.getplugin("capturemanager")
    if capman is not None and capman.is_globally_capturing():
        capman.read_global_capture()
    logging_plugin = config.pluginmanager.getplugin("logging-plugin")
    handler = getattr(logging_plugin, "report_handler", None)
    if handler is not None:
        handler.reset()


def _raise(exc: BaseException, note: str) -> None:
    __tracebackhide__ = True
    if hasattr(exc, "add_note"):
        exc.add_note(note)
    raise exc


def run_marked(item: pytest.Function, marker: pytest.Mark, session: Any, section_key: Any) -> None:
    """Explore the marked test ``item`` (or replay ``session.replay``); a failure is re-raised with its report
    section stored in ``item.stash[section_key]`` and the summary's figures in ``item.user_properties``."""
    __tracebackhide__ = True
    if inspect.iscoroutinefunction(item.obj) or inspect.isasyncgenfunction(item.obj):
        bad_marker(item, "async test functions are not supported (racecheck controls threads)")
    found = settings(item, marker, session)
    body = ScheduleBody(item, found)
    props = item.user_properties
    if session.replay is not None:
        if session.replay_problem is not None:  # a pytest-xdist worker's usage error (see pytest_collection_finish)
            pytest.fail(session.replay_problem, pytrace=False)
        _replay_marked(item, body, found, session.replay, section_key)
        return
    props.extend([("racecheck_strategy", found.strategy), ("racecheck_seed", found.seed)])
    if found.repetition is not None:
        props.append(("racecheck_repetition", f"{found.repetition[0]}/{found.repetition[1]}"))
    result = _explore(item, body, found, session.progress)
    props.append(("racecheck_schedules", result.schedules))
    props.append(("racecheck_interleavings", result.interleavings))
    if result.exhausted:
        props.append(("racecheck_exhausted", result.exhausted_note))  # "exhausted: all N distinct schedules ..."
    props.extend(scope_props(result))
    if result.failure is None:
        return
    failure = result.failure
    props.append(("racecheck_token", failure.token))
    races = any(not f.not_a_race and not f.hang for f in result.failures)
    hang = any(f.hang for f in result.failures)
    props.append(("racecheck_verdict", "race" if races else "hang" if hang else "not-a-race"))
    if len(result.failures) > 1:
        props.append(("racecheck_failures", len(result.failures)))
        props.append(("racecheck_tokens", " ".join(f.token for f in result.failures)))
    _discard_captured_output(item.config)
    shown, remark = failure, ""
    try:
        again = replay(body, failure.token, **found.shared)
    except (ReplayDivergence, TokenError) as exc:
        remark = pytest_report.replay_diverged(exc)
    else:
        if again.failure is None:
            remark = pytest_report.REPLAY_PASSED
        else:
            shown = again.failure
            if again.failure.trace != failure.trace:
                remark = pytest_report.REPLAY_TRACE_DIFFERS
    how = pytest_report.How(item.nodeid, result.schedules, found.strategy, found.seed, found.repetition,
                            found.replay_args)
    lines = pytest_report.failure_lines(how, failure, remark, total=len(result.failures))
    parts = [pytest_report.section(lines, shown.trace)]
    for position, other in enumerate(result.failures[1:], 2):
        more = pytest_report.failure_lines(how, other, "", total=len(result.failures), position=position)
        parts.append(pytest_report.section(more, other.trace))
    item.stash[section_key] = "\n\n".join(parts)
    _raise(shown.exception, "\n".join(lines[:3]))


def scope_props(result: Any) -> list[tuple[str, str]]:
    """What a marked test's exploration covered and the data races it showed, as report properties (plain text,
    so they cross to the xdist controller) that ``pytest_report.summary_line`` prints under the test's line."""
    props = [("racecheck_coverage", result.coverage.text())] if result.coverage is not None else []
    races = race_lines(result.data_races)
    if races:
        props.append(("racecheck_data_races", "\n".join(races)))
    return props


def replay_owner_problem(items: list[pytest.Item], token: str) -> str | None:
    """None when ``token`` was recorded for one of the selected test functions, else the one line that says so,
    naming the token's test where its module is among the selected tests'."""
    functions = [getattr(item, "obj", None) for item in items]
    functions = [f for f in functions if callable(f) and hasattr(f, "__qualname__")]
    target = decode(token).target
    if any(target_of(f.__module__, f.__qualname__) == target for f in functions):
        return None
    owner = owner_in(target, dict.fromkeys(sys.modules.get(f.__module__) for f in functions))
    whose = f"for {owner}" if owner else "for another test"
    return (f"racecheck: --racecheck-replay: the token was recorded {whose}, not for any selected test "
            f"({_selected(items)})")


def _selected(items: list[pytest.Item]) -> str:
    shown = ", ".join(item.nodeid for item in items[:3])
    return shown + (f" and {len(items) - 3} more" if len(items) > 3 else "")


def _explore(item: pytest.Function, body: ScheduleBody, found: Settings, progress: str) -> Any:
    """explore() the test, with a live line on the terminal when the session draws one."""
    from racecheck.frontends.pytest_progress import LiveLine, enabled

    shared = found.shared
    line = None
    if enabled(item.config, progress):
        line = LiveLine(item.config, found.schedules, shared.get("progress"))
        shared = {**shared, "progress": line}
    try:
        return explore(body, strategy=found.strategy, schedules=found.schedules, seed=found.seed, **shared)
    finally:
        if line is not None:
            line.close()


def _replay_marked(item: pytest.Function, body: ScheduleBody, found: Settings, token: str, section_key: Any) -> None:
    __tracebackhide__ = True
    item.user_properties.append(("racecheck_replay", token))
    try:
        result = replay(body, token, **found.shared)
    except ForeignTokenError as exc:  # recorded for another of the selected tests (check_replay_owner)
        pytest.skip(f"--racecheck-replay: the token belongs to another test ({exc})")
    except TokenError as exc:
        pytest.fail(f"--racecheck-replay: {exc}", pytrace=False)
    except ReplayDivergence as exc:
        pytest.fail(f"racecheck: {exc}", pytrace=False)
    if result.failure is None:
        return
    failure = result.failure
    lines = pytest_report.replay_lines(item.nodeid, failure, token, found.replay_args)
    item.stash[section_key] = pytest_report.section(lines, failure.trace)
    _raise(failure.exception, "\n".join(lines))
