"""`racecheck run` and `racecheck replay` on the stub catalogue: exit codes, deterministic partitioning across
--jobs, the time budget, and a token that replays the same trace byte for byte in another process."""

from __future__ import annotations

import re

import pytest
from cli_helpers import invoke, one_error_line, racecheck_subprocess

TOKEN = re.compile(r"racecheck replay (rcc1\.\S+)")


def _block(output: str) -> str:
    """The failure block: everything from the message line to the trace's outcome line."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if "RACE" in line) + 1
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("-> "))
    return "\n".join(lines[start : end + 1])


def test_run_finds_the_race_and_replay_in_another_process_prints_the_same_trace(stub):
    found = invoke("run", "lost-update", "--schedules", "200")
    assert found.exit_code == 1, found.output
    assert "RACE FOUND" in found.stdout and "lost update" in found.stdout
    assert "\n  racing pair on shared state: T" in found.stdout  # the engine's racing pair, under the trace
    token = TOKEN.search(found.stdout).group(1)
    assert token.startswith("rcc1.lost-update.real.")
    again = racecheck_subprocess("replay", token, env={"PYTHONHASHSEED": "4242"})
    assert again.returncode == 1, again.stderr
    assert "RACE REPRODUCED" in again.stdout
    assert _block(again.stdout) == _block(found.stdout)  # message, token, trace: byte for byte
    pair = [line for line in found.stdout.splitlines() if line.startswith("  racing pair on ")]
    assert len(pair) == 1 and pair[0] in again.stdout.splitlines()  # the same racing pair, printed the same way


def test_fixed_target_is_clean_and_dfs_exhausts(stub):
    clean = invoke("run", "lost-update", "--target", "cli_stub_catalogue:LockedCounter", "--schedules", "60")
    assert clean.exit_code == 0, clean.output
    assert "clean, 60 schedules" in clean.stdout and "0 races found" in clean.stdout
    dfs = invoke("run", "lost-update", "--target", "cli_stub_catalogue:LockedCounter", "--strategy", "dfs")
    assert dfs.exit_code == 0, dfs.output
    done = re.search(r"clean, (\d+) schedules, \d+ interleavings \(dfs, seed 0\), exhausted: all (\d+) distinct "
                     r"schedules with at most 2 preemptions explored", dfs.stdout)
    assert done and done.group(1) == done.group(2), dfs.stdout


def test_no_scenario_means_all_and_both_means_each_default_semantics(stub):
    out = invoke("run", "--schedules", "30", "-q")
    assert out.exit_code == 1, out.output
    cells = [line for line in out.stdout.splitlines() if " on cli_stub_catalogue:" in line]
    assert [line.split(":")[0] for line in cells] == ["lost-update [real] on cli_stub_catalogue",
                                                     "rare-order [real] on cli_stub_catalogue",
                                                     "open-remove [posix] on cli_stub_catalogue",
                                                     "open-remove [windows] on cli_stub_catalogue"]
    assert "step" not in out.stdout  # --quiet: no trace
    assert "open-remove [windows]" in out.stdout and "PermissionError" not in out.stdout


def test_fs_option_selects_semantics_and_rejects_unsupported(stub):
    out = invoke("run", "open-remove", "--fs", "windows", "--schedules", "60")
    assert out.exit_code == 1 and "WinError 32" in out.stdout
    bad = invoke("run", "open-remove", "--fs", "real")
    assert bad.exit_code == 2
    assert "does not run under --fs real" in one_error_line(bad.stderr)


def _cells(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if " on cli_stub_catalogue:" in line or "replay with" in line]


@pytest.mark.parametrize("strategy", ["pct", "random"])
def test_jobs_gives_the_same_failures_as_one_process(stub, strategy):
    # rare-order needs no fake filesystem (workers start without importing Lightning), and with seed 0 its first
    # failure lies beyond the first chunk, so chunks run concurrently and the lowest failing index must win
    args = ["run", "rare-order", "lost-update", "--schedules", "400", "--seed", "0", "--strategy", strategy, "-q"]
    one = invoke(*args, "--jobs", "1")  # in this process
    two = racecheck_subprocess(*args, "--jobs", "2")  # a fresh interpreter and two worker processes
    assert one.exit_code == two.returncode == 1, (one.output, two.stderr)
    lines_one, lines_two = _cells(one.stdout), _cells(two.stdout)
    # same cells, same failing schedule index, same tokens; only the measured schedules/s may differ
    strip = re.compile(r", \d+ schedules/s")
    assert [strip.sub("", x) for x in lines_one] == [strip.sub("", x) for x in lines_two]
    indices = [int(m) for m in re.findall(r"RACE FOUND at schedule #(\d+)", one.stdout)]
    assert len(indices) == 2 and indices[0] >= 25, one.stdout


def test_time_budget_explores_a_deterministic_prefix_and_says_how_much(stub):
    out = invoke("run", "lost-update", "--target", "cli_stub_catalogue:LockedCounter", "--schedules", "100000",
                 "--time-budget", "0.5")
    assert out.exit_code == 0, out.output
    match = re.search(r"time budget of 0.5s reached: explored (\d+) of 100000 schedules", out.stdout)
    assert match, out.stdout
    explored = int(match.group(1))
    assert 0 < explored < 100000 and explored % 25 == 0  # whole chunks: a prefix of the same sequence
    # the prefix is the same schedules as an unbudgeted run of that length: same verdict, same count
    full = invoke("run", "lost-update", "--target", "cli_stub_catalogue:LockedCounter", "--schedules", str(explored))
    assert f"clean, {explored} schedules" in full.stdout


def test_a_failure_inside_the_budget_is_the_same_failure(stub):
    budget = invoke("run", "lost-update", "--schedules", "100000", "--time-budget", "600", "-q")
    plain = invoke("run", "lost-update", "--schedules", "100000", "-q")
    assert budget.exit_code == plain.exit_code == 1
    assert TOKEN.search(budget.stdout).group(1) == TOKEN.search(plain.stdout).group(1)


def test_instrument_option_is_checked_and_carried_in_the_token(stub):
    bad = invoke("run", "lost-update", "--instrument", "no_such_module_xyz")
    assert bad.exit_code == 2 and "--instrument 'no_such_module_xyz'" in one_error_line(bad.stderr)
    found = invoke("run", "lost-update", "--instrument", "json", "--schedules", "100", "-q")
    assert found.exit_code == 1
    from racecheck.frontends.clitoken import decode

    assert decode(TOKEN.search(found.stdout).group(1)).instrument == ("json",)


@pytest.mark.parametrize(
    "args, message",
    [
        (["run", "no-such-scenario"], "unknown scenario 'no-such-scenario'"),
        (["run", "lost-update", "--target", "no_such_module_xyz:Thing"], "cannot import target module"),
        (["run", "lost-update", "--target", "os:path"], "is not a class"),
        (["run", "lost-update", "--target", "nocolon"], "must look like"),
        (["run", "lost-update", "--target", "cli_stub_catalogue:OpenWhileRemoving"], "is not a counter"),
        (["run", "--strategy", "bogus"], "Invalid value for '--strategy'"),
        (["run", "--schedules", "0"], "Invalid value for '--schedules'"),
        (["run", "--jobs", "x"], "Invalid value for '--jobs'"),
        (["run", "--time-budget", "-1"], "positive number of seconds"),
        (["run", "--tx", "0*popen"], "the count must be between 1 and 256"),
        (["replay", "rcc1.not.a.token"], "malformed token"),
        (["replay", "banana"], "not a racecheck CLI token"),
        (["replay", "rc1.pct.0.18.26c9.3973.5x94b3.eNpjYGQEAAAGAAM.f0ecff7a"], "this is an engine token"),
        (["replay"], "Missing argument 'TOKEN'"),
        (["frobnicate"], "No such command 'frobnicate'"),
        ([], "missing command"),
        (["gate"], "Missing option '--baseline'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(stub, args, message):
    result = invoke(*args)
    assert result.exit_code == 2, result.output
    assert message in one_error_line(result.stderr)
    assert result.stdout == ""


def test_bad_input_from_a_real_process_is_one_line(stub):
    out = racecheck_subprocess("run", "lost-update", "--target", "no_such_module_xyz:Thing")
    assert out.returncode == 2 and out.stdout == ""
    assert "cannot import target module 'no_such_module_xyz'" in one_error_line(out.stderr)


def test_replay_of_a_token_whose_code_changed_is_a_divergence_exit_1(stub, monkeypatch):
    found = invoke("run", "lost-update", "--schedules", "200", "-q")
    token = TOKEN.search(found.stdout).group(1)
    import cli_stub_catalogue
    from racecheck.frontends import parallel

    def changed_add(self):  # the code under test changed: no scheduling point any more
        self.n = self.n + 1

    parallel._prepared_cache.clear()
    monkeypatch.setattr(cli_stub_catalogue.RacyCounter, "add", changed_add)
    result = invoke("replay", token)
    assert result.exit_code == 1, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "diverged" in lines[0] and "Traceback" not in result.output
