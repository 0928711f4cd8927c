"""Plugin = explore (issue 49): the same code explored through the plugin and through ``racecheck.explore`` watches
the same memory and prints the same trace. The plugin's schedule body is a callable object of the engine's, which
memory watching once could not see through: a test whose shared state lives in its own module, reached only from
the test function (the thread's target a ``functools.partial``), was explored with no memory watched at all and
passed. And ``tmp_path`` reads ``$TMP1`` in traces, as the first temporary directory a test makes under explore(),
not pytest's numbered directory, so a replay in the next session prints the same trace."""

from __future__ import annotations

import textwrap

from plugin_helpers import section, token_of, trace_rows

pytest_plugins = ("pytester",)

PROGRAM = textwrap.dedent(
    """
    import functools
    import os
    import tempfile
    import threading

    import pytest
    import racecheck

    class Manager:
        def __init__(self, folder):
            self.folder = folder
            self.count = 0

        def save(self, step):
            with open(os.path.join(self.folder, f"s{step}.txt"), "w") as f:
                f.write("x")
            self.count += 1

    def body(folder):
        m = Manager(folder)
        t = threading.Thread(target=functools.partial(m.save, 1))
        t.start()
        m.save(2)
        t.join()
        assert m.count == 2

    @pytest.mark.racecheck(schedules=50, strategy="random")
    def test_marked(tmp_path):
        body(str(tmp_path))

    def in_a_temporary_directory():
        with tempfile.TemporaryDirectory() as folder:
            body(folder)

    def test_explored_directly():
        result = racecheck.explore(in_a_temporary_directory, schedules=50, strategy="random")
        print("EXPLORE-TRACE-START")
        print(result.failure.trace if result.failure else "no failure")
        print("EXPLORE-TRACE-END")
    """
)


def _rows(report: str) -> list[str]:
    """The trace's rows but the first (``begin`` names each root function's own line)."""
    rows = trace_rows(report)
    assert rows and rows[0].startswith("begin"), report
    return rows[1:]


def test_the_plugin_watches_memory_and_prints_the_trace_explore_prints(pytester):
    pytester.makepyfile(test_same=PROGRAM)
    result = pytester.runpytest("-p", "no:randomly", "-p", "no:cacheprovider", "-s", "--basetemp",
                                str(pytester.path / "first"))
    result.assert_outcomes(passed=1, failed=1)  # the lost update on Manager.count is found through the plugin too
    out = result.stdout.str()
    report = section(out)
    assert "read Manager#1.count" in report and "write Manager#1.count" in report
    direct = out.split("EXPLORE-TRACE-START", 1)[1].split("EXPLORE-TRACE-END", 1)[0]
    assert "no failure" not in direct
    assert _rows(report) == _rows(direct)
    assert "$TMP1/s2.txt" in report and "first" not in "\n".join(trace_rows(report))

    # the next session numbers pytest's temporary directories differently: the replay prints the same trace
    again = pytester.runpytest("-p", "no:randomly", "-p", "no:cacheprovider", "test_same.py::test_marked",
                               "--racecheck-replay", token_of(report), "--basetemp", str(pytester.path / "second"))
    again.assert_outcomes(failed=1)
    assert trace_rows(section(again.stdout.str())) == trace_rows(report)
