"""``racecheck explore MODULE:FUNCTION``: a user's own code from the working directory, found, replayed from its token
in a fresh process, its locked twin clean, every Config option a flag, bad input one line and exit status 2."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from cli_helpers import invoke, one_error_line
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from racecheck.config import Config
from racecheck.frontends import clitoken
from racecheck.frontends.cli.options import NO_FLAG

SETTINGS = textwrap.dedent(
    """
    import threading
    from concurrent.futures import ThreadPoolExecutor


    class LazySettings:
        '''Loads its settings on first use, and should load them once.'''

        def __init__(self):
            self._value = None
            self.loads = 0

        def get(self):
            if self._value is None:
                self.loads += 1
                self._value = {"debug": False}
            return self._value


    class LockedSettings(LazySettings):
        def __init__(self):
            super().__init__()
            self._lock = threading.Lock()

        def get(self):
            with self._lock:
                return super().get()


    def _two_readers(settings):
        with ThreadPoolExecutor(2) as pool:
            list(pool.map(lambda _: settings.get(), range(2)))
        assert settings.loads == 1, f"settings loaded {settings.loads} times"


    def check_lazy():
        _two_readers(LazySettings())


    def check_locked():
        _two_readers(LockedSettings())


    def needs_arguments(settings, retries=3):
        _two_readers(settings)


    async def check_async():
        pass


    NOT_CALLABLE = 3
    """
)


def _console_script() -> list[str]:
    """The ``racecheck`` console script next to this interpreter (what a user runs: the working directory is not
    on its sys.path by itself), or a script file outside the working directory that behaves the same."""
    script = Path(sys.executable).with_name("racecheck")
    if script.exists():
        return [str(script)]
    shim = Path(__file__).resolve().parent / "cli_console_shim.py"
    return [sys.executable, str(shim)]


def _racecheck(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "RACECHECK_CATALOGUE")}
    return subprocess.run([*_console_script(), *args], cwd=cwd, capture_output=True, text=True, timeout=300, env=env)


@pytest.fixture
def user_code(tmp_path, monkeypatch, request):
    """A user's project folder holding a module of their own (named per test, so imports never collide), as the
    working directory of this process."""
    name = f"settings_cache_{request.node.name.split('[')[0][-40:]}".replace("-", "_")
    (tmp_path / f"{name}.py").write_text(SETTINGS)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.delenv("RACECHECK_CATALOGUE", raising=False)
    yield name
    sys.modules.pop(name, None)


def _token(text: str) -> str:
    return next(word for word in text.split() if word.startswith("rcc1."))


def test_a_lazy_init_race_is_found_exit_1_and_its_token_replays_in_a_fresh_process(tmp_path):
    (tmp_path / "settings_cache.py").write_text(SETTINGS)
    found = _racecheck(tmp_path, "explore", "settings_cache:check_lazy", "--schedules", "300")
    assert found.returncode == 1, found.stderr
    head = found.stdout.splitlines()[0]
    assert head.startswith("function [real] on settings_cache:check_lazy: RACE FOUND at schedule #"), found.stdout
    assert "AssertionError: settings loaded 2 times" in found.stdout
    assert "1 cell, " in found.stdout and "1 race found" in found.stdout
    token = _token(found.stdout)
    assert clitoken.decode(token).target == "settings_cache:check_lazy"  # the token names the function
    again = _racecheck(tmp_path, "replay", token)
    assert again.returncode == 1, again.stderr
    assert again.stdout.startswith("function [real] on settings_cache:check_lazy: RACE REPRODUCED at schedule #")
    trace = found.stdout[found.stdout.index("step "):found.stdout.index("-> T")]
    assert trace in again.stdout  # the same schedule, step for step


def test_the_locked_twin_is_clean_exit_0(user_code):
    result = invoke("explore", f"{user_code}:check_locked", "--schedules", "150")
    assert result.exit_code == 0, result.output
    assert f"function [real] on {user_code}:check_locked: clean, 150 schedules" in result.stdout
    assert "0 races found" in result.stdout


def test_a_test_file_by_pytest_node_id_and_the_report_folder(user_code, tmp_path):
    result = invoke("explore", f"{user_code}.py::check_lazy", "--schedules", "300", "--report", "out", "-q")
    assert result.exit_code == 1, result.output
    data = json.loads((tmp_path / "out" / "results.json").read_text())
    cell = data["cells"][0]
    assert cell["target"] == f"{user_code}.py::check_lazy" and cell["verdict"] == "race"


def test_config_flags_reach_the_exploration_and_the_token(user_code):
    # without memory watching the lazy init's reads and writes are no scheduling points: nothing to find
    quiet = invoke("explore", f"{user_code}:check_lazy", "--no-memory", "--schedules", "100")
    assert quiet.exit_code == 0, quiet.output
    found = invoke("explore", f"{user_code}:check_lazy", "--strategy", "dfs", "--preemption-bound", "1",
                   "--watchdog", "5", "--max-steps", "5000", "--schedules", "500")
    assert found.exit_code == 1, found.output
    assert "(dfs, seed 0)" in found.stdout
    parsed = clitoken.decode(_token(found.stdout))
    assert dict(parsed.options) == {"watchdog": 5.0, "max_steps": 5000}  # what a replay needs, not search options
    again = invoke("replay", _token(found.stdout))
    assert again.exit_code == 1 and "RACE REPRODUCED" in again.stdout


def test_every_config_option_is_a_flag():
    text = invoke("explore", "--help").stdout
    for field in dataclasses.fields(Config):
        if field.name not in NO_FLAG:
            assert "--" + field.name.replace("_", "-") in text, field.name


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["no_such_module_xyz:f"], "no module named 'no_such_module_xyz'"),
        (["{mod}:nothing_here"], "has no function 'nothing_here'"),
        (["{mod}:needs_arguments"], "needs arguments (settings)"),
        (["{mod}:LazySettings"], "is a class, not a function"),
        (["{mod}:NOT_CALLABLE"], "is a int, not a function"),
        (["{mod}:check_async"], "is an async function"),
        (["{mod}"], "must look like 'package.module:function'"),
        (["no_such_file.py::test_x"], "no such file 'no_such_file.py'"),
        (["{mod}:check_lazy", "--max-steps", "0"], "bad option: max_steps must be >= 1"),
        (["{mod}:check_lazy", "--watchdog", "soon"], "--watchdog must be a number of seconds or 'none'"),
        (["{mod}:check_lazy", "--preemption-bound", "-1"], "preemption_bound must be >= 0"),
        (["{mod}:check_lazy", "--strategy", "best"], "Invalid value for '--strategy'"),
        (["{mod}:check_lazy", "--schedules", "many"], "Invalid value for '--schedules'"),
        (["{mod}:check_lazy", "--schedules", "100000000000"], "Invalid value for '--schedules'"),
        (["{mod}:check_lazy", "--instrument", "no_such_module_xyz"], "--instrument 'no_such_module_xyz'"),
        (["{mod}:check_lazy", "--locations", "sometimes"], "Invalid value for '--locations'"),
        ([], "Missing argument 'MODULE:FUNCTION'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(user_code, args, message):
    result = invoke("explore", *[arg.format(mod=user_code) for arg in args])
    assert result.exit_code == 2, result.output
    assert message in one_error_line(result.stderr)


def test_the_console_script_imports_from_the_working_directory_for_run_too(tmp_path):
    (tmp_path / "settings_cache.py").write_text(SETTINGS)
    result = _racecheck(tmp_path, "run", "--target", "settings_cache:LazySettings")
    assert result.returncode == 2
    line = one_error_line(result.stderr)
    assert "is not a CheckpointIO" in line and "racecheck explore MODULE:FUNCTION" in line  # imported, not missing


def test_a_token_whose_schedule_was_recorded_for_another_function_is_a_usage_error(user_code):
    found = invoke("explore", f"{user_code}:check_lazy", "--schedules", "300", "-q")
    parsed = clitoken.decode(_token(found.stdout))
    forged = dataclasses.replace(parsed, target=f"{user_code}:check_locked").encode()
    result = invoke("replay", forged)
    assert result.exit_code == 2
    assert (f"token was recorded for another test function ({user_code}.check_lazy), not {user_code}.check_locked"
            in one_error_line(result.stderr))


_VALUES = st.sampled_from(["0", "-1", "1", "2.5", "none", "default", "lines", "posix", "real", "x", "", "1e9"])
_FLAGS = st.sampled_from(["--strategy", "--schedules", "--seed", "--depth", "--preemption-bound", "--fs", "--max-steps",
                          "--watchdog", "--shrink-budget", "--max-failures", "--race-budget", "--locations",
                          "--preempt", "--exclude", "--instrument", "--no-memory", "--check-determinism", "--bogus"])


@given(st.sampled_from(["{mod}:check_locked", "{mod}:nothing", "{mod}", ":", "::", "{mod}.py::check_locked", "",
                        "no_such_module_xyz:f", "{mod}:needs_arguments"]),
       st.lists(st.tuples(_FLAGS, _VALUES), max_size=4))
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
def test_fuzzed_arguments_are_a_verdict_or_one_line(user_code, function, options):
    args = [function.format(mod=user_code)]
    for flag, value in options:
        args += [flag] if flag in ("--no-memory", "--check-determinism") else [flag, value]
    result = invoke("explore", *args, "--schedules", "3")
    # check_locked never fails, unless a limit given here makes it (--max-steps 1: a step-limit verdict, exit 1);
    # anything else is refused
    limited = any(flag in ("--max-steps", "--watchdog") for flag, _ in options)
    assert result.exit_code in ((0, 1, 2) if limited else (0, 2)), result.output
    assert "Traceback" not in result.output
    if result.exit_code == 2:
        one_error_line(result.stderr)
