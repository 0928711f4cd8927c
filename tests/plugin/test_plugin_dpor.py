"""``@pytest.mark.racecheck(strategy="dpor")`` and ``--racecheck-strategy dpor``: the marked test finds the race,
its printed token replays it, and the fixed test is proven with the classes counted."""

from __future__ import annotations

import re
import shlex
import textwrap

from plugin_helpers import section, token_of

pytest_plugins = ("pytester",)

TESTS = textwrap.dedent(
    """
    import threading
    import pytest
    import racecheck

    def _increment(state, lock):
        with lock or _nothing():
            value = state["n"]
            racecheck.point("between read and write")
            state["n"] = value + 1

    class _nothing:
        def __enter__(self):
            return self
        def __exit__(self, *exc):
            return False

    def _two(lock):
        state = {"n": 0}
        threads = [threading.Thread(target=_increment, args=(state, lock)) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert state["n"] == 2

    @pytest.mark.racecheck(strategy="dpor")
    def test_lost_update():
        _two(None)

    @pytest.mark.racecheck(strategy="dpor")
    def test_locked():
        _two(threading.Lock())
    """
)

RUN = ("-p", "no:randomly", "-p", "no:cacheprovider")


def test_the_marker_runs_dpor_and_its_token_replays(pytester):
    pytester.makepyfile(test_dpor=TESTS)
    result = pytester.runpytest(*RUN)
    result.assert_outcomes(failed=1, passed=1)
    out = result.stdout.str()
    report = section(out)
    assert token_of(report).startswith("rc1.dpor.0.")
    # 21 classes: which thread takes the lock first, and where the bare point inside it (conflicting with every
    # step) falls among the other thread's steps before its acquire and the main thread's start and join
    assert re.search(r"test_locked: \d+ schedules, 21 interleavings \(dpor, seed 0; exhausted: all 21 classes of "
                     r"equivalent interleavings explored\) passed", out), out
    command = re.search(r"^replay: (pytest .*)$", report, re.M).group(1)
    again = pytester.runpytest(*RUN, *shlex.split(command)[1:])
    again.assert_outcomes(failed=1)


def test_the_command_line_option_chooses_dpor(pytester):
    pytester.makepyfile(test_dpor=TESTS.replace('strategy="dpor"', "schedules=50"))
    result = pytester.runpytest(*RUN, "--racecheck-strategy", "dpor")
    result.assert_outcomes(failed=1, passed=1)
    assert token_of(section(result.stdout.str())).startswith("rc1.dpor.0.")
