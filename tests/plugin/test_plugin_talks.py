"""The plugin talks while it works and says it right: a live line per explored test on a terminal (forced here with
``--racecheck-progress``, since pytester's output is no terminal), none in a plain non-terminal run nor from xdist
workers; "explored test(s)" and "1 preemption" in its words; a bare ``assert`` reads as its statement, with pytest's
rewritten values where pytest made them, in the plugin's report and in ``explore()``'s own texts.

Every race here is made by racecheck itself (``racecheck.point`` as the delay hook), never by sleeping.
"""

from __future__ import annotations

import importlib.util
import re
import textwrap

import racecheck
from plugin_helpers import section

pytest_plugins = ("pytester",)

LIVE = re.compile(r"racecheck: \d+/\d+ schedules?, \d+ interleavings?, \d+/s, \d+ failures? found")

TESTS = textwrap.dedent(
    """
    import threading
    import racecheck
    import pytest
    from helper import lost_update_count

    def _locked_count():
        lock = threading.Lock()
        state = {"n": 0}
        def add():
            with lock:
                state["n"] += 1
        threads = [threading.Thread(target=add) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return state["n"]

    def test_clean_unmarked():
        assert _locked_count() == 2

    @pytest.mark.racecheck(schedules=40)
    def test_clean_marked():
        assert _locked_count() == 2

    @pytest.mark.racecheck(schedules=300)
    def test_rewritten():
        assert lost_update_count() == 2
    """
)

# Not a test module, so pytest does not rewrite its asserts: the bare assert raises AssertionError with no text.
HELPER = textwrap.dedent(
    """
    import threading
    import racecheck

    def lost_update_count():
        state = {"n": 0}
        def add():
            value = state["n"]
            racecheck.point("between read and write")
            state["n"] = value + 1
        threads = [threading.Thread(target=add) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return state["n"]

    def bare():
        n = lost_update_count()
        assert n == 2
    """
)


def _files(pytester) -> None:
    pytester.makepyfile(test_talk=TESTS, helper=HELPER)
    pytester.syspathinsert()


def test_the_live_line_shows_when_asked_and_is_erased(pytester):
    _files(pytester)
    result = pytester.runpytest("-p", "no:randomly", "-p", "no:cacheprovider", "--racecheck-progress",
                                "-k", "clean_marked")
    result.assert_outcomes(passed=1)
    out = result.stdout.str()
    lines = LIVE.findall(out)
    assert lines, out
    assert "racecheck: 40/40 schedules" in out  # the last schedule is always drawn
    # the last line drawn, the cursor backed over it, then blanked out before pytest's own mark: nothing is left
    assert re.search(r"racecheck: 40/40 schedules[^\x08\n]*\x08+ +\x08+[.]", out), repr(out)


def test_no_live_line_when_stdout_is_not_a_terminal(pytester):
    _files(pytester)
    result = pytester.runpytest("-p", "no:randomly", "-p", "no:cacheprovider", "-k", "clean_marked")
    result.assert_outcomes(passed=1)
    out = result.stdout.str()
    assert not LIVE.search(out) and "\b" not in out, out
    assert "racecheck: 1 explored test, 40 schedules, 0 failing" in out


def test_xdist_workers_draw_no_live_line(pytester):
    _files(pytester)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider", "-n", "1",
                                           "--racecheck-progress", "-k", "clean_marked", timeout=300)
    result.assert_outcomes(passed=1)
    assert not LIVE.search(result.stdout.str()), result.stdout.str()


def test_the_ini_key_and_the_off_switch(pytester):
    _files(pytester)
    pytester.makeini("[pytest]\nracecheck_progress = on\n")
    on = pytester.runpytest("-p", "no:randomly", "-p", "no:cacheprovider", "-k", "clean_marked")
    assert LIVE.search(on.stdout.str()), on.stdout.str()
    off = pytester.runpytest("-p", "no:randomly", "-p", "no:cacheprovider", "-k", "clean_marked",
                             "--racecheck-no-progress")
    assert not LIVE.search(off.stdout.str()) and "\b" not in off.stdout.str()
    pytester.makeini("[pytest]\nracecheck_progress = sometimes\n")
    bad = pytester.runpytest("-k", "clean_marked")
    assert bad.ret == 4
    assert "racecheck: ini racecheck_progress must be one of auto, on, off, got 'sometimes'" in bad.stderr.str()


def test_tests_explored_without_a_marker_are_explored_tests(pytester):
    _files(pytester)
    result = pytester.runpytest("-p", "no:randomly", "-p", "no:cacheprovider", "--racecheck",
                                "--racecheck-schedules", "30", "-k", "clean")
    result.assert_outcomes(passed=2)
    out = result.stdout.str()
    assert "racecheck: 2 explored tests, 70 schedules, 0 failing" in out  # the marker's 40, the option's 30
    assert "marked test" not in out


def test_one_preemption_and_a_rewritten_assert_read_right(pytester):
    _files(pytester)
    result = pytester.runpytest("-p", "no:randomly", "-p", "no:cacheprovider", "-k", "rewritten")
    result.assert_outcomes(failed=1)
    report = section(result.stdout.str())
    assert ", 1 preemption (before shrinking" in report, report
    assert "preemptions (" not in report and "1 preemptions" not in report
    # pytest rewrote the test module's assert: its values follow the statement and where it is
    assert re.search(r"-> T0 exception: AssertionError: assert lost_update_count\(\) == 2 \(test_talk\.py:\d+\): "
                     r"assert 1 == 2", report), report


def test_a_bare_assert_in_code_pytest_did_not_rewrite_shows_its_statement(pytester):
    _files(pytester)
    pytester.makepyfile(test_bare=textwrap.dedent(
        """
        import pytest
        from helper import bare

        @pytest.mark.racecheck(schedules=300)
        def test_bare():
            bare()
        """
    ))
    result = pytester.runpytest("-p", "no:randomly", "-p", "no:cacheprovider", "test_bare.py")
    result.assert_outcomes(failed=1)
    report = section(result.stdout.str())
    assert re.search(r"-> T0 exception: AssertionError: assert n == 2 \(helper\.py:\d+\)$", report, re.M), report
    assert "AssertionError: ;" not in result.stdout.str() and "AssertionError: \n" not in report


def test_explore_failure_text_and_summary_show_a_bare_asserts_statement(tmp_path):
    (tmp_path / "bare_helper.py").write_text(HELPER)
    spec = importlib.util.spec_from_file_location("bare_helper", tmp_path / "bare_helper.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # imported by hand: pytest's rewriting never sees it
    result = racecheck.explore(module.bare, schedules=300)
    failure = result.failure
    assert failure is not None and str(failure.exception) == ""
    line = HELPER.splitlines().index("    assert n == 2") + 1
    expected = f"AssertionError: assert n == 2 (bare_helper.py:{line})"
    assert failure.message == expected
    assert f"FAILED after {result.schedules} schedules: {expected}; token" in result.summary()
    assert f"): {expected}\n" in str(failure) and f"-> T0 exception: {expected}" in str(failure)


def test_an_assertion_error_raised_by_hand_keeps_its_own_words():
    from racecheck.runtime.exception_text import exception_text

    try:
        raise AssertionError("lost update")
    except AssertionError as exc:
        assert exception_text(exc) == "AssertionError: lost update"
    try:
        raise AssertionError
    except AssertionError as exc:
        assert exception_text(exc) == "AssertionError"
    assert exception_text(ValueError("bad")) == "ValueError: bad"
