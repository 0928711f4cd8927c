"""The plugin under pytest-xdist and pytest-repeat.

xdist: each marked test runs whole in one worker, with a seed that depends only on its settings (never on the worker
or on the order), so ``-n 2`` explores the same schedules and finds the same failures (same tokens) as a serial run.
pytest-repeat: repetition k of a marked test explores with seed base + k - 1, recorded in the report.
"""

from __future__ import annotations

import re
import textwrap
import xml.etree.ElementTree as ET

from plugin_helpers import section

pytest_plugins = ("pytester",)

SUITE = textwrap.dedent(
    """
    import threading
    import pytest
    import racecheck

    def _increment(state):
        value = state["n"]
        racecheck.point("read")
        state["n"] = value + 1

    def _run(target, *args_per_thread):
        threads = [threading.Thread(target=target, args=args) for args in args_per_thread]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    @pytest.mark.racecheck(schedules=300)
    def test_lost_update():
        state = {"n": 0}
        _run(_increment, (state,), (state,))
        assert state["n"] == 2

    def _lock_order(first, second):
        with first:
            racecheck.point("holding one")
            with second:
                pass

    @pytest.mark.racecheck(schedules=300, strategy="random", seed=7)
    def test_lock_order_deadlock():
        a, b = threading.Lock(), threading.Lock()
        _run(_lock_order, (a, b), (b, a))

    @pytest.mark.racecheck(schedules=40)
    def test_locked_increment_is_fine():
        state, lock = {"n": 0}, threading.Lock()
        def locked():
            with lock:
                _increment(state)
        _run(locked, (), (), ())
        assert state["n"] == 3

    @pytest.mark.parametrize("n", [1, 2])
    def test_unmarked(n):
        assert n
    """
)


def _summary(output: str) -> list[str]:
    text = output.split("= racecheck =", 1)[1]
    lines = [line.strip() for line in text.splitlines()[1:]]
    return [line for line in lines if line.startswith(("test_suite.py::", "racecheck:"))]


def test_xdist_finds_the_same_failures_with_the_same_schedules_as_a_serial_run(pytester):
    pytester.makepyfile(test_suite=SUITE)
    serial = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider", "-n", "0", timeout=300)
    serial.assert_outcomes(failed=2, passed=3)
    parallel = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider", "-n", "2", timeout=300)
    parallel.assert_outcomes(failed=2, passed=3)
    assert "2 workers" in parallel.stdout.str()
    expected = _summary(serial.stdout.str())
    assert _summary(parallel.stdout.str()) == expected
    assert len([line for line in expected if " token rc1." in line]) == 2
    assert expected[-1].startswith("racecheck: 3 explored tests, ") and expected[-1].endswith(", 2 failing")
    # the report sections (trace and replay command) come back from the workers intact
    for output in (serial.stdout.str(), parallel.stdout.str()):
        assert "replay: pytest test_suite.py::test_lost_update --racecheck-replay rc1.pct.0." in output
        assert "replay: pytest test_suite.py::test_lock_order_deadlock --racecheck-replay rc1.random.7." in output


def test_repeat_gives_each_repetition_its_own_seed_recorded_in_the_report(pytester):
    pytester.makepyfile(test_suite=SUITE)
    result = pytester.runpytest("-p", "no:randomly", "--count", "3", "-k", "lost_update", "--junitxml", "out.xml")
    result.assert_outcomes(failed=3)
    lines = _summary(result.stdout.str())
    tokens = {}
    for step in (1, 2, 3):
        line = next(line for line in lines if line.startswith(f"test_suite.py::test_lost_update[{step}-3]"))
        assert f"(pct, seed {step - 1}, repetition {step}/3) FAILED token rc1.pct.{step - 1}." in line, line
        tokens[step] = line.rsplit(" ", 1)[1]
    assert len(set(tokens.values())) == 3
    # the report of each repetition names its seed; junit carries it as a property
    out = result.stdout.str()
    assert "(pct, seed 2, repetition 3 of 3)" in out
    assert re.search(r"replay: pytest 'test_suite.py::test_lost_update\[2-3\]' --racecheck-replay rc1\.pct\.1\.", out)
    cases = ET.parse(pytester.path / "out.xml").getroot().iter("testcase")
    seeds = sorted(
        prop.get("value") for case in cases for prop in case.iter("property") if prop.get("name") == "racecheck_seed"
    )
    assert seeds == ["0", "1", "2"]
    # each repetition's failure replays from its own printed command
    line = next(line for line in section(out).splitlines() if line.startswith("replay: "))
    assert line.startswith("replay: pytest 'test_suite.py::test_lost_update[")


def test_under_xdist_a_token_of_no_selected_test_fails_the_run_naming_its_test(pytester):
    pytester.makepyfile(test_suite=SUITE)
    found = pytester.runpytest("-p", "no:randomly", "-p", "no:cacheprovider", "-k", "lost_update")
    token = re.search(r"--racecheck-replay (rc1\.\S+)", found.stdout.str()).group(1)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider", "-n", "2",
                                           "test_suite.py::test_unmarked", "--racecheck", "--racecheck-replay", token,
                                           timeout=300)
    assert result.ret == 1  # tests failed: a usage error in a worker would crash the xdist controller
    result.assert_outcomes(failed=2)
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    result.stdout.fnmatch_lines(["*racecheck: --racecheck-replay: the token was recorded for "
                                 "test_suite.test_lost_update, not for any selected test "
                                 "(test_suite.py::test_unmarked[[]1[]], *"])
