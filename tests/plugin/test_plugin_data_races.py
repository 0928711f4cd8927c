"""The plugin's data-race report and coverage statement: a passing marked test with an unsynchronised counter is
reported under its summary line with both lines; ``data_races="fail"`` (marker) or ``--racecheck-data-races fail``
fails it with a token that ``--racecheck-replay`` reproduces; every line says what the exploration covered."""

from __future__ import annotations

import textwrap

from plugin_helpers import section, token_of

pytest_plugins = ("pytester",)

COUNTER = textwrap.dedent(
    """
    import threading
    import pytest

    class Box:
        def __init__(self):
            self.value = 0

    def _count():
        box = Box()
        def inc():
            box.value += 1
        threads = [threading.Thread(target=inc) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    @pytest.mark.racecheck(schedules=20)
    def test_counter():
        _count()

    @pytest.mark.racecheck(schedules=20, data_races="fail")
    def test_counter_strict():
        _count()
    """
)


def test_reported_under_the_summary_line_and_failing_when_asked(pytester):
    pytester.makepyfile(test_counter=COUNTER)
    result = pytester.runpytest("-p", "no:randomly", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()
    assert "test_counter.py::test_counter: 20 schedules" in out
    assert "covered: a sample of the schedule space (pct: 20 schedules" in out
    line = next(n for n, text in enumerate(COUNTER.lstrip("\n").splitlines(), 1) if "box.value += 1" in text)
    assert "data races: 2" in out and f"data race on Box#1.value: T1 write @test_counter.py:{line}" in out
    report = section(out)
    assert "DataRaceError: data race on Box#1.value" in report
    token = token_of(report)
    again = pytester.runpytest("-p", "no:randomly", "test_counter.py::test_counter_strict", "--racecheck-replay",
                               token)
    again.assert_outcomes(failed=1)
    assert "DataRaceError: data race on Box#1.value" in again.stdout.str()


def test_command_line_option(pytester):
    pytester.makepyfile(test_counter=COUNTER)
    strict = pytester.runpytest("-p", "no:randomly", "test_counter.py::test_counter", "--racecheck-data-races", "fail")
    strict.assert_outcomes(failed=1)
    quiet = pytester.runpytest("-p", "no:randomly", "test_counter.py::test_counter", "--racecheck-data-races",
                               "ignore")
    quiet.assert_outcomes(passed=1)
    assert "data race" not in quiet.stdout.str()
    bad = pytester.runpytest("-p", "no:randomly", "--racecheck-data-races", "warn")
    assert bad.ret != 0 and "--racecheck-data-races must be report, fail or ignore" in bad.stderr.str()
