"""``pytest --racecheck``: every selected test is explored as if it carried the marker, with no edit to the file;
``--racecheck-fs`` and ``--racecheck-instrument`` stand in for the marker's ``fs=`` and ``instrument=``, and the
printed replay command carries them. ``--racecheck-max-failures N`` lists every distinct failure, and a failure
that happens under every schedule tried is reported as not a race.

Every race here is made by racecheck itself (``racecheck.point`` as the delay hook), never by sleeping.
"""

from __future__ import annotations

import re
import shlex
import textwrap
from pathlib import Path

import pytest
from plugin_helpers import section, token_of, trace_rows

pytest_plugins = ("pytester",)

UNMARKED = textwrap.dedent(
    """
    import threading
    import racecheck

    def _increment(state):
        value = state["n"]
        racecheck.point("between read and write")
        state["n"] = value + 1

    def test_lost_update():
        state = {"n": 0}
        threads = [threading.Thread(target=_increment, args=(state,)) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert state["n"] == 2

    def test_files(tmp_path):
        (tmp_path / "a.txt").write_text("x")
        assert str(tmp_path).startswith("/racefs/") == STARTS_IN_FAKE

    STARTS_IN_FAKE = False
    """
)

RUN = ("-p", "no:randomly", "-p", "no:cacheprovider")


def test_without_the_option_unmarked_tests_run_once_plainly(pytester):
    pytester.makepyfile(test_plain=UNMARKED)
    result = pytester.runpytest(*RUN)
    result.assert_outcomes(passed=2)  # the lost update is never hit by one plain run
    assert "= racecheck =" not in result.stdout.str()


def test_racecheck_explores_every_selected_test_and_the_command_replays_it(pytester):
    pytester.makepyfile(test_plain=UNMARKED)
    first = pytester.runpytest(*RUN, "--racecheck", "--racecheck-schedules", "300")
    first.assert_outcomes(failed=1, passed=1)
    out = first.stdout.str()
    report = section(out)
    token = token_of(report)
    command = re.search(r"^replay: (pytest .*)$", report, re.M).group(1)
    assert shlex.split(command)[1:] == ["test_plain.py::test_lost_update", "--racecheck", "--racecheck-replay", token]
    assert "racecheck: 2 explored tests," in out  # both were explored (the file test makes no decision: one schedule)
    again = pytester.runpytest(*RUN, *shlex.split(command)[1:])
    again.assert_outcomes(failed=1)
    assert section(again.stdout.str()).split("\n\n", 1)[1] == report.split("\n\n", 1)[1]
    # without --racecheck the same token finds no marked test to replay in: the command needs the option
    plain = pytester.runpytest(*RUN, "test_plain.py::test_lost_update", "--racecheck-replay", token)
    plain.assert_outcomes(passed=1)


def test_racecheck_fs_puts_tmp_path_in_the_fake_store_and_is_in_the_replay_command(pytester):
    pytester.makepyfile(test_plain=UNMARKED.replace("STARTS_IN_FAKE = False", "STARTS_IN_FAKE = True"))
    result = pytester.runpytest(*RUN, "--racecheck", "--racecheck-fs", "posix", "--racecheck-schedules", "300",
                                "--racecheck-instrument", "json")
    result.assert_outcomes(failed=1, passed=1)  # test_files saw /racefs/...: it passed
    command = re.search(r"^replay: (pytest .*)$", section(result.stdout.str()), re.M).group(1)
    assert shlex.split(command)[2:-2] == ["--racecheck", "--racecheck-fs", "posix", "--racecheck-instrument", "json"]


@pytest.mark.parametrize("args, message", [
    (("--racecheck-max-failures", "0"), "ERROR: racecheck: --racecheck-max-failures must be >= 1, got 0"),
    (("--racecheck-max-failures", "x"), "ERROR: racecheck: --racecheck-max-failures must be an integer, got 'x'"),
    (("--racecheck-fs", "ntfs"), "ERROR: racecheck: --racecheck-fs must be one of posix, windows, got 'ntfs'"),
    (("--racecheck-instrument", "no_such_module_xyz"),
     "ERROR: racecheck: --racecheck-instrument: no module named 'no_such_module_xyz'"),
])
def test_bad_option_values_are_usage_errors(pytester, args, message):
    pytester.makepyfile(test_plain=UNMARKED)
    result = pytester.runpytest(*RUN, "--racecheck", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


TWO_BUGS = textwrap.dedent(
    """
    import threading
    import pytest
    import racecheck

    def test_two_bugs():
        state = {"ready": False, "value": None, "count": 0}

        def producer():
            state["ready"] = True
            racecheck.point("published flag before value")
            state["value"] = 42

        def consumer():
            if state["ready"] and state["value"] is None:
                raise ValueError("saw the flag before the value")

        def increment():
            seen = state["count"]
            racecheck.point("between read and write")
            state["count"] = seen + 1

        threads = [threading.Thread(target=t) for t in (producer, consumer, increment, increment)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert state["count"] == 2, "lost update"

    @pytest.mark.racecheck(schedules=50)
    def test_refused():
        raise TypeError("Trainer refuses this plugin: not a CheckpointIO")
    """
)


def test_max_failures_lists_each_distinct_failure_and_a_schedule_independent_one_is_not_a_race(pytester):
    pytester.makepyfile(test_bugs=TWO_BUGS)
    result = pytester.runpytest(*RUN, "--racecheck", "--racecheck-max-failures", "5", "--racecheck-strategy",
                                "random", "--racecheck-schedules", "400")
    result.assert_outcomes(failed=2)
    out = result.stdout.str()
    report = section(out)
    # Both bugs, each with its token; with memory watched a bug can show with more than one racing pair (the
    # consumer's read of the flag, or of the value), and each pair is a distinct failure of its own.
    count = int(re.search(r"racecheck found (\d+) distinct failures; \[1/", report).group(1))
    assert count >= 2
    for n in range(1, count + 1):
        assert f"racecheck found {count} distinct failures; [{n}/{count}] failing schedule #" in report
    tokens = re.findall(r"^token: (rc1\.\S+)$", report, re.M)
    assert len(tokens) == count and len(set(tokens)) == count
    assert "ValueError: saw the flag before the value" in report and "AssertionError: lost update" in report
    summary = next(line for line in out.splitlines() if line.startswith("test_bugs.py::test_two_bugs: "))
    assert summary.endswith(f"FAILED, {count} distinct failures, tokens {' '.join(tokens)}"), summary

    refused = section(out.split("test_refused", 1)[1])
    assert refused.startswith("racecheck: fails under every schedule tried: not a race: TypeError: Trainer refuses")
    assert "RACE" not in refused and "racing pair" not in refused
    summary = next(line for line in out.splitlines() if line.startswith("test_bugs.py::test_refused: "))
    assert "FAILED (fails under every schedule tried: not a race) token rc1." in summary


UPSTREAM = Path(__file__).with_name("upstream_async_checkpoint.py")

#: Lightning's test_async_checkpoint_plugin as a user's file holds it: no marker, no racecheck import; its steps
#: and assertions are stated once, in upstream_async_checkpoint.py.
UNMARKED_UPSTREAM = textwrap.dedent(
    """
    from lightning.pytorch.plugins.io.async_plugin import AsyncCheckpointIO
    from upstream_async_checkpoint import check_async_checkpoint_plugin

    def test_async_checkpoint_plugin(tmp_path):
        check_async_checkpoint_plugin(tmp_path, AsyncCheckpointIO)
    """
)


def test_lightnings_unmarked_test_fails_on_stock_lightning_with_racecheck_and_replays(pytester):
    pytest.importorskip("lightning")
    pytester.makepyfile(upstream_async_checkpoint=UPSTREAM.read_text(),
                        test_checkpoint_io_plugin=UNMARKED_UPSTREAM)
    # --racecheck-no-memory: the unmarked test's race is on files; a Trainer's memory is watched in
    # test_upstream_lightning.py, and this one stays a minute and a half shorter
    options = ("--racecheck", "--racecheck-fs", "posix", "--racecheck-instrument",
               "lightning.pytorch.plugins.io.async_plugin", "--racecheck-schedules", "500", "--racecheck-no-memory")
    plain = pytester.runpytest(*RUN, "test_checkpoint_io_plugin.py")
    assert plain.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED)  # flaky on its own: may pass or fail
    first = pytester.runpytest(*RUN, "test_checkpoint_io_plugin.py", *options)
    first.assert_outcomes(failed=1)
    out = first.stdout.str()
    report = section(out)
    token = token_of(report)
    assert "FileNotFoundError: [Errno 2] No such file or directory: " in out
    epoch0 = "/racefs/pytest/test_async_checkpoint_plugin/epoch=0-step=1.ckpt"
    rows = trace_rows(report)

    def at(op: str) -> int:
        return next(index for index, row in enumerate(rows) if op in row)

    # the worker renames its temp file onto epoch0, the main thread removes epoch0, then the worker's chmod fails
    assert at(f"-> {epoch0}") < at(f"fs.remove {epoch0}") < at(f"fs.chmod {epoch0}"), "\n".join(rows)
    command = re.search(r"^replay: (pytest .*)$", report, re.M).group(1)
    args = shlex.split(command)[1:]
    assert args == ["test_checkpoint_io_plugin.py::test_async_checkpoint_plugin", *options[:5],
                    "--racecheck-replay", token]
    again = pytester.runpytest_subprocess(*RUN, *args, timeout=300)
    again.assert_outcomes(failed=1)
    assert section(again.stdout.str()).split("\n\n", 1)[1] == report.split("\n\n", 1)[1]  # same trace
