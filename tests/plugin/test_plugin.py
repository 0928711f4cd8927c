"""The pytest plugin, driven through pytester in-process: a marked racy test fails with a report that replays.

Every race here is made by racecheck itself (``racecheck.point`` as the delay hook), never by sleeping.
"""

from __future__ import annotations

import re
import textwrap

import pytest
from plugin_helpers import section, token_of

pytest_plugins = ("pytester",)

RACY = textwrap.dedent(
    """
    import threading
    import pytest
    import racecheck

    CALLS = []

    def _increment(state):
        value = state["n"]
        racecheck.point("between read and write")
        state["n"] = value + 1

    def _two_threads():
        state = {"n": 0}
        threads = [threading.Thread(target=_increment, args=(state,)) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return state["n"]

    @pytest.mark.racecheck(schedules=300)
    def test_lost_update():
        CALLS.append(1)
        print(f"schedule-call {len(CALLS)}")
        assert _two_threads() == 2

    def test_unmarked_runs_once():
        CALLS.clear()
        assert _two_threads() == 2
    """
)


def test_marked_test_fails_with_trace_token_command_and_only_the_failing_schedules_output(pytester):
    pytester.makepyfile(test_racy=RACY)
    result = pytester.runpytest("-p", "no:randomly", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1, passed=1)
    out = result.stdout.str()
    report = section(out)
    token = token_of(report)
    assert f"replay: pytest test_racy.py::test_lost_update --racecheck-replay {token}" in report
    assert "step    | T0" in report and ">>" in report and "point between read and write" in report
    assert re.search(r"-> T0 exception: AssertionError: assert _two_threads\(\) == 2 \(test_racy.py:\d+\): "
                     r"assert 1 == 2", report), report
    # the exception with its traceback, pointing into the test
    assert re.search(r">\s+assert _two_threads\(\) == 2\nE\s+assert 1 == 2", out), out
    # captured output: the failing schedule's only (the replay is the last call), not the other schedules'
    captured = section(out, "Captured stdout call")
    lines = [line for line in captured.splitlines() if line.startswith("schedule-call")]
    assert len(lines) == 1, captured
    assert int(lines[0].split()[1]) > 2  # many schedules ran before it
    assert "racecheck: 1 explored test," in out and "1 failing" in out


def test_the_printed_command_replays_the_same_trace(pytester):
    pytester.makepyfile(test_racy=RACY)
    first = pytester.runpytest("-p", "no:randomly", "-p", "no:cacheprovider")
    report = section(first.stdout.str())
    token = token_of(report)
    again = pytester.runpytest("-p", "no:randomly", "test_racy.py::test_lost_update", "--racecheck-replay", token)
    again.assert_outcomes(failed=1)
    replayed = section(again.stdout.str())
    assert replayed.split("\n\n", 1)[1] == report.split("\n\n", 1)[1]  # the trace, byte for byte
    again.stdout.fnmatch_lines(
        ["test_racy.py::test_lost_update: replay FAILED", "racecheck: 1 replayed test, 1 schedule, 1 failing"]
    )
    # exploring again finds the same token: the seed is the only source of choice
    third = pytester.runpytest("-p", "no:randomly", "-p", "no:cacheprovider")
    assert token_of(section(third.stdout.str())) == token


def test_replay_token_of_no_selected_test_is_a_usage_error_and_other_selected_tests_are_skipped(pytester):
    pytester.makepyfile(test_racy=RACY)
    token = token_of(section(pytester.runpytest("-p", "no:randomly").stdout.str()))
    pytester.makepyfile(
        test_other="""
        import pytest

        @pytest.mark.racecheck(schedules=3)
        def test_other():
            pass
        """
    )
    alone = pytester.runpytest("-p", "no:randomly", "test_other.py", "--racecheck-replay", token)
    assert alone.ret == pytest.ExitCode.USAGE_ERROR
    alone.stderr.fnmatch_lines(["ERROR: racecheck: --racecheck-replay: the token was recorded for another test, "
                                "not for any selected test (test_other.py::test_other)"])
    assert "Traceback" not in alone.stderr.str()
    both = pytester.runpytest("-p", "no:randomly", "test_other.py", "test_racy.py::test_lost_update",
                              "--racecheck-replay", token, "-rs")
    both.assert_outcomes(skipped=1, failed=1)
    both.stdout.fnmatch_lines(["*the token belongs to another test*"])
    bad = pytester.runpytest("test_other.py", "--racecheck-replay", token[:-3])
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["ERROR: racecheck: --racecheck-replay: corrupted token*"])
    assert "Traceback" not in bad.stderr.str()


def test_replay_token_of_a_test_in_the_same_file_names_that_test(pytester):
    pytester.makepyfile(test_racy=RACY + """

@pytest.mark.racecheck(schedules=3)
def test_first():
    pass
""")
    token = token_of(section(pytester.runpytest("-p", "no:randomly", "test_racy.py::test_lost_update").stdout.str()))
    result = pytester.runpytest("-p", "no:randomly", "test_racy.py::test_first", "--racecheck-replay", token)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    lines = [line for line in result.stderr.str().splitlines() if line.strip()]
    assert lines == ["ERROR: racecheck: --racecheck-replay: the token was recorded for test_racy.test_lost_update, "
                     "not for any selected test (test_racy.py::test_first)"]


def test_unmarked_tests_are_untouched_and_p_no_racecheck_disables_the_plugin(pytester):
    pytester.makepyfile(
        test_mode="""
        from pathlib import Path
        import pytest
        from racecheck.runtime import current_run

        LOG = Path(__file__).parent / "calls.txt"

        @pytest.mark.racecheck(schedules=4, skip_duplicates=False)
        def test_marked():
            with open(LOG, "a") as log:
                log.write("controlled\\n" if current_run() is not None else "plain\\n")

        def test_unmarked():
            assert current_run() is None
        """
    )
    log = pytester.path / "calls.txt"
    on = pytester.runpytest("-p", "no:randomly")
    on.assert_outcomes(passed=2)
    assert "racecheck: 1 explored test, 4 schedules, 0 failing" in on.stdout.str()
    assert log.read_text() == "controlled\n" * 5  # memory watching's warm-up run, then the 4 schedules
    log.unlink()
    off = pytester.runpytest("-p", "no:racecheck", "-p", "no:randomly", "-W", "ignore::pytest.PytestUnknownMarkWarning")
    off.assert_outcomes(passed=2)
    assert "racecheck: " not in off.stdout.str() and "= racecheck =" not in off.stdout.str()
    assert log.read_text() == "plain\n"


def test_tmp_path_is_fresh_and_same_named_every_schedule_on_the_real_disk(pytester):
    pytester.makepyfile(
        test_tmp="""
        import pytest

        SEEN = []

        @pytest.mark.racecheck(schedules=20, strategy="random", skip_duplicates=False)
        def test_writes(tmp_path, tmpdir):
            assert list(tmp_path.iterdir()) == []
            assert str(tmpdir) == str(tmp_path)
            (tmp_path / "sub").mkdir()
            (tmp_path / "sub" / "f").write_text("x")
            SEEN.append(str(tmp_path))

        def test_check():
            assert len(SEEN) == 21 and len(set(SEEN)) == 1  # the warm-up run and 20 schedules
        """
    )
    pytester.runpytest("-p", "no:randomly").assert_outcomes(passed=2)


def test_fs_puts_tmp_path_tmpdir_and_racefs_into_a_fresh_fake_store(pytester, tmp_path_factory):
    # fs= imports Lightning's IO modules (and torch): import them out here, so that pytester's in-process run does
    # not drop them from sys.modules afterwards (torch cannot be imported twice in one process)
    pytest.importorskip("lightning.pytorch")
    pytester.makepyfile(
        test_fake="""
        import os
        import fsspec
        import pytest

        SEEN = []

        @pytest.mark.racecheck(schedules=6, fs="windows", skip_duplicates=False)
        def test_fake(tmp_path, tmpdir, racefs):
            assert racefs.root == "/racefs" and racefs.url == "racefs:///racefs"
            assert str(tmp_path) == "/racefs/pytest/test_fake" == str(tmpdir)
            assert list(tmp_path.iterdir()) == [] and tmpdir.listdir() == []
            tmpdir.join("a.ckpt").write("hello")
            (tmp_path / "b.ckpt").write_bytes(b"b")
            with fsspec.open(racefs.url + "/c.ckpt", "wb") as handle:
                handle.write(b"c")
            assert os.path.exists(racefs.root + "/c.ckpt")
            SEEN.append(sorted(path for path, _, _ in racefs.store().files()))

        def test_check():
            assert len(SEEN) == 7  # the warm-up run and 6 schedules
            assert all(files == ["/racefs/c.ckpt", "/racefs/pytest/test_fake/a.ckpt",
                                 "/racefs/pytest/test_fake/b.ckpt"] for files in SEEN), SEEN

        def test_racefs_needs_fs(racefs):
            pass
        """
    )
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(["*the racefs fixture needs @pytest.mark.racecheck(fs=*"])
    assert not __import__("os").path.exists("/racefs")  # nothing reached the real disk


PASSING = """
import pytest

@pytest.mark.racecheck({marker})
def test_quiet():
    pass
"""

LAYERS = """
import pytest

@pytest.mark.racecheck(skip_duplicates=False)  # a body without decisions has one schedule otherwise
def test_plain():
    pass

@pytest.mark.racecheck(schedules=5, seed=11, skip_duplicates=False)
def test_marker_wins():
    pass

@pytest.mark.racecheck(strategy="dfs", preemption_bound=0)
def test_dfs_runs_out():
    pass
"""


SMALL_SPACE = """
import threading
import pytest

def two_workers():
    lock = threading.Lock()
    order = []

    def work(n):
        with lock:
            order.append(n)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(order) == [0, 1]

@pytest.mark.racecheck(strategy="random", schedules=500)
def test_sampled():
    two_workers()

@pytest.mark.racecheck(strategy="dfs", preemption_bound=None, schedules=500)
def test_enumerated():
    two_workers()
"""


def test_summary_shows_interleavings_per_test_and_a_small_space_as_exhausted(pytester):
    """Without -v: each marked test's line says its schedules and distinct interleavings; random sampling stops
    once it has run every distinct schedule (as many as unbounded dfs enumerates) and says so, also in JUnit."""
    import xml.etree.ElementTree as ET

    pytester.makepyfile(test_small=SMALL_SPACE)
    result = pytester.runpytest("-p", "no:randomly", "--junitxml=out.xml")
    result.assert_outcomes(passed=2)
    lines = {m.group(1): m.group(0) for m in re.finditer(r"test_small\.py::(\w+): .*", result.stdout.str())}
    enumerated = re.search(r"(\d+) schedules, (\d+) interleavings \(dfs, seed 0; exhausted: all (\d+) distinct",
                           lines["test_enumerated"])
    assert enumerated, lines
    schedules, interleavings, distinct = map(int, enumerated.groups())
    assert schedules == distinct > interleavings == 2  # two lock orders; more schedules that reach them
    assert lines["test_sampled"] == (
        f"test_small.py::test_sampled: {schedules} schedules, 2 interleavings (random, seed 0; exhausted: all "
        f"{schedules} distinct schedules explored) passed"
    )
    case = next(c for c in ET.parse(pytester.path / "out.xml").getroot().iter("testcase")
                if c.get("name") == "test_sampled")
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert props["racecheck_interleavings"] == "2" and props["racecheck_schedules"] == str(schedules)
    assert props["racecheck_exhausted"] == f"exhausted: all {schedules} distinct schedules explored"


def test_precedence_marker_over_command_line_over_ini_over_defaults(pytester):
    pytester.makepyfile(test_layers=LAYERS)
    defaults = pytester.runpytest("-p", "no:randomly", "-v", "-k", "plain")
    defaults.stdout.fnmatch_lines(["test_layers.py::test_plain: 1000 schedules, 1 interleaving (pct, seed 0) passed"])
    pytester.makeini("[pytest]\nracecheck_schedules = 9\nracecheck_strategy = random\nracecheck_seed = 4\n")
    ini = pytester.runpytest("-p", "no:randomly", "-v")
    ini.assert_outcomes(passed=3)
    ini.stdout.fnmatch_lines_random([
        "test_layers.py::test_plain: 9 schedules, 1 interleaving (random, seed 4) passed",
        "test_layers.py::test_marker_wins: 5 schedules, 1 interleaving (random, seed 11) passed",
        "test_layers.py::test_dfs_runs_out: 1 schedule, 1 interleaving (dfs, seed 4; exhausted: all 1 distinct "
        "schedule with at most 0 preemptions explored) passed",
        "racecheck: 3 explored tests, 15 schedules, 0 failing",
    ])
    cli = pytester.runpytest("-p", "no:randomly", "-v", "--racecheck-schedules", "7", "--racecheck-seed", "3",
                             "--racecheck-strategy", "pct")
    cli.stdout.fnmatch_lines_random([
        "test_layers.py::test_plain: 7 schedules, 1 interleaving (pct, seed 3) passed",
        "test_layers.py::test_marker_wins: 5 schedules, 1 interleaving (pct, seed 11) passed",
    ])


@pytest.mark.parametrize(
    ("args", "ini", "message"),
    [
        (["--racecheck-strategy", "bfs"], "",
         "--racecheck-strategy must be one of random, pct, dfs, pos, dpor, got 'bfs'"),
        (["--racecheck-schedules", "0"], "", "--racecheck-schedules must be >= 1, got 0"),
        (["--racecheck-seed", "x"], "", "--racecheck-seed must be an integer, got 'x'"),
        ([], "racecheck_schedules = many", "ini racecheck_schedules must be an integer, got 'many'"),
        (["--racecheck-replay", "hello"], "", "--racecheck-replay: not a racecheck token*"),
    ],
)
def test_bad_options_are_one_line_usage_errors(pytester, args, ini, message):
    pytester.makepyfile(test_quiet=PASSING.format(marker=""))
    if ini:
        pytester.makeini("[pytest]\n" + ini)
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: racecheck: {message}"])
    assert "Traceback" not in result.stderr.str()


BAD_MARKERS = {
    "200": "takes keyword arguments only*",
    "schedule=3": "unknown argument 'schedule'*",
    "schedules=0": "schedules must be an integer >= 1, got 0",
    "strategy='bfs'": "strategy must be one of random, pct, dfs, pos, dpor, got 'bfs'",
    "fs='ntfs'": "fs must be None (the real disk), 'posix', 'windows', True or a racecheck.fakefs.FakeFS, not 'ntfs'",
    "max_steps=0": "max_steps must be >= 1 (an int), not 0",
    "watchdog=True": "watchdog must be a positive number of seconds or None, not True",
}


def test_bad_marker_arguments_fail_the_test_with_one_line(pytester):
    source = ["import pytest"]
    for index, marker in enumerate(BAD_MARKERS):
        source += [f"@pytest.mark.racecheck({marker})", f"def test_bad_{index}():", "    pass", ""]
    pytester.makepyfile(test_bad="\n".join(source))
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(failed=len(BAD_MARKERS))
    result.stdout.fnmatch_lines_random(
        [f"*racecheck marker on test_bad_{index}: {message}" for index, message in enumerate(BAD_MARKERS.values())]
    )
    assert "Traceback" not in result.stdout.str() and "During handling" not in result.stdout.str()


def test_deadlock_is_reported_with_who_waits_on_what(pytester):
    pytester.makepyfile(
        test_deadlock="""
        import threading
        import pytest

        a, b = None, None

        def _one(first, second):
            with first:
                with second:
                    pass

        @pytest.mark.racecheck(schedules=200, strategy="random")
        def test_lock_order():
            a, b = threading.Lock(), threading.Lock()
            threads = [threading.Thread(target=_one, args=(a, b)), threading.Thread(target=_one, args=(b, a))]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        """
    )
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(failed=1)
    report = section(result.stdout.str())
    assert ": deadlock in T" in report.splitlines()[0]
    result.stdout.fnmatch_lines(["E   racecheck.errors.Deadlock: *T1 waits: acquire Lock#*"])


def test_a_failure_that_depends_on_state_shared_through_a_fixture_is_flagged(pytester):
    pytester.makepyfile(
        test_shared="""
        import pytest

        @pytest.fixture
        def calls():
            return []

        @pytest.mark.racecheck(schedules=10, skip_duplicates=False)
        def test_third_call_fails(calls):
            calls.append(1)
            assert len(calls) != 3
        """
    )
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(failed=1)
    report = section(result.stdout.str())
    note = next(line for line in report.splitlines() if line.startswith("note: "))
    assert note.startswith("note: replaying the token in this process") and "state shared across schedules" in note
    assert "failing schedule #1, after 2 schedules" in report  # the warm-up run made the first call


LAZY = textwrap.dedent(
    """
    import threading
    import pytest

    class Settings:
        def __init__(self):
            self._value = None
            self.loads = 0

        def get(self):
            if self._value is None:
                self.loads += 1
                self._value = {"timeout": 5}
            return self._value

    @pytest.mark.racecheck(schedules=200)
    def test_lazy_init_loads_once():
        settings = Settings()
        threads = [threading.Thread(target=settings.get) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert settings.loads == 1
    """
)


def test_a_lazy_init_race_is_found_with_no_marks_and_not_with_racecheck_no_memory(pytester):
    pytester.makepyfile(test_lazy=LAZY)
    found = pytester.runpytest("-p", "no:randomly", "-p", "no:cacheprovider")
    found.assert_outcomes(failed=1)
    assert "assert 2 == 1" in found.stdout.str()
    blind = pytester.runpytest("-p", "no:randomly", "-p", "no:cacheprovider", "--racecheck-no-memory")
    blind.assert_outcomes(passed=1)  # with memory=False the check and the set are one step: nothing to reorder
