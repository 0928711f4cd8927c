"""What cannot be controlled is named (issue 45 item 5): a process started by the operating system from a controlled
thread (a child that is not Python, ``os.system``, ``os.posix_spawn``, ``os.fork`` with live threads), one started
before the run, and a grandchild that outlives its parent are listed among the escapes with their kind and line;
and "not a race" is never said when such a process ran beside the failure."""

from __future__ import annotations

import os
import signal
import subprocess

import process_programs
import pytest
import racecheck
from racecheck.control import processes_escape


def _line(function, text: str) -> str:
    """``process_programs.py:N`` of the first line of ``function`` holding ``text``."""
    import inspect

    lines, start = inspect.getsourcelines(function)
    offset = next(i for i, line in enumerate(lines) if text in line)
    return f"process_programs.py:{start + offset}"


CASES = [
    (process_programs.shell_child, "a child process that is not Python (sh)", "subprocess.run"),
    (process_programs.system_call, "os.system (true)", "os.system"),
    (process_programs.posix_spawn, "os.posix_spawn (true)", "os.posix_spawn"),
    (process_programs.fork_with_threads, "os.fork with live threads", "os.fork()"),
]


@pytest.mark.parametrize("program,kind,text", CASES, ids=[c[0].__name__ for c in CASES])
def test_a_process_started_by_a_controlled_thread_is_named_with_its_line(program, kind, text):
    result = racecheck.explore(program, schedules=2)
    assert result.ok, result.summary()
    line = result.coverage.text()
    assert "processes racecheck does not control (" in line
    assert f"{kind}" in line and f"@{_line(program, text)}" in line, line


def test_a_process_started_before_the_run_is_named():
    process_programs.BEFORE.append(subprocess.Popen(["sleep", "0"]))
    try:
        result = racecheck.explore(process_programs.started_before, schedules=1)
    finally:
        process_programs.BEFORE.pop().wait()
    assert "a process started before the run (sleep)" in result.coverage.text()


def test_a_grandchild_that_outlives_its_parent_is_named():
    try:
        result = racecheck.explore(process_programs.grandchild, schedules=1)
    finally:
        for pid in process_programs.GRANDCHILDREN:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        process_programs.GRANDCHILDREN.clear()
    text = result.coverage.text()
    assert "a child process that is not Python (sh)" in text
    assert "a grandchild process that outlived its parent (sh)" in text, text


def test_not_a_race_is_never_said_beside_an_uncontrolled_process():
    plain = racecheck.explore(process_programs.always_fails, schedules=3)
    assert plain.failure.not_a_race  # the check decides when nothing escaped
    result = racecheck.explore(process_programs.always_fails_beside_a_child, schedules=3)
    failure = result.failure
    assert failure is not None and not failure.not_a_race and failure.depends_on_schedule is None
    assert failure.undecided.startswith("whether it is a race could not be decided: a process racecheck does not "
                                        "control ran at the same time (a Python child process started by subprocess")
    assert "not a race" not in result.verdict().replace("could not be decided", "")
    assert failure.undecided in str(failure)


def test_nothing_is_recorded_outside_a_run_and_the_hooks_are_given_back():
    real = (subprocess.Popen.__init__, os.system, os.fork)
    with processes_escape.watching():
        assert os.system("true") == 0  # this thread is not controlled
        assert processes_escape.seen() == []
    assert (subprocess.Popen.__init__, os.system, os.fork) == real


def test_record_is_the_entry_point_for_others():
    def program() -> None:
        processes_escape.record("a worker process left uncontrolled", "elsewhere.py:7")

    result = racecheck.explore(program, schedules=1)
    assert "a worker process left uncontrolled @elsewhere.py:7" in result.coverage.text()
