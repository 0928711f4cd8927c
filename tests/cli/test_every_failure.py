"""`racecheck run --max-failures N` shows every distinct failure of a cell (terminal, results.json, junit.xml,
index.html; the same with --jobs), and a failure that happens under every schedule tried is called what it is: not
a race."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET

import pytest
from cli_helpers import invoke, racecheck_subprocess

TOKEN = re.compile(r"racecheck replay (rcc1\.\S+)")
TWO = "cli_stub_catalogue:TwoBugCounter"


def test_max_failures_reports_each_distinct_failure_with_its_token(stub, tmp_path):
    out = invoke("run", "lost-update", "--target", TWO, "--fs", "real", "--schedules", "200", "--max-failures", "5",
                 "--report", str(tmp_path))
    assert out.exit_code == 1, out.output
    line = next(x for x in out.stdout.splitlines() if x.startswith("lost-update [real]"))
    # Both bugs; a bare point conflicts with every step, so one of them can also show with a second racing pair,
    # which counts as a distinct failure of its own (3 here).
    n = int(re.search(r"RACE FOUND, (\d+) distinct failures at schedules #", line).group(1))
    assert n >= 2, line
    assert all(f"  [{k}/{n}] " in out.stdout for k in range(1, n + 1))
    assert "AssertionError: lost update" in out.stdout and "RuntimeError: another add claimed" in out.stdout
    tokens = TOKEN.findall(out.stdout)
    assert len(tokens) == n and len(set(tokens)) == n
    assert f"({n} distinct failures)" in out.stdout.splitlines()[-2 if "report:" in out.stdout else -1]  # n >= 2

    doc = json.loads((tmp_path / "results.json").read_text())
    cell = doc["cells"][0]
    assert cell["verdict"] == "race" and cell["max_failures"] == 5
    assert [f["token"] for f in cell["failures"]] == tokens
    assert all(f["depends_on_schedule"] is True and f["occurrences"] >= 1 for f in cell["failures"])
    assert doc["summary"]["failures"] == n
    case = ET.parse(tmp_path / "junit.xml").getroot().find("testsuite/testcase")
    failure = case.find("failure")
    assert f"{n} distinct failures" in failure.get("message") and all(t in failure.text for t in tokens)
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert props["distinct_failures"] == str(n) and props["verdict"] == "race"
    page = (tmp_path / "index.html").read_text()
    assert all(f"(failure {k} of {n})" in page for k in range(1, n + 1)) and f"{n} distinct failures" in page

    for token in tokens:
        again = invoke("replay", token)
        assert again.exit_code == 1 and "RACE REPRODUCED" in again.stdout


def test_max_failures_gives_the_same_failures_with_two_processes(stub):
    args = ("run", "lost-update", "--target", TWO, "--fs", "real", "--schedules", "200", "--max-failures", "3", "-q")
    one = invoke(*args)
    two = invoke(*args, "--jobs", "2")
    assert one.exit_code == two.exit_code == 1, two.output
    assert TOKEN.findall(one.stdout) == TOKEN.findall(two.stdout) and len(TOKEN.findall(one.stdout)) >= 2
    assert one.stdout.splitlines()[0] == two.stdout.splitlines()[0]


def test_default_still_stops_at_the_first_failure(stub):
    out = invoke("run", "lost-update", "--target", TWO, "--fs", "real", "--schedules", "200")
    assert out.exit_code == 1 and "RACE FOUND at schedule #" in out.stdout and "[1/" not in out.stdout
    assert len(TOKEN.findall(out.stdout)) == 1


def test_a_failure_under_every_schedule_is_not_a_race(stub, tmp_path):
    out = invoke("run", "lost-update", "--target", "cli_stub_catalogue:RefusingCounter", "--fs", "real",
                 "--schedules", "50", "--report", str(tmp_path))
    assert out.exit_code == 1, out.output
    assert "RACE FOUND" not in out.stdout
    line = out.stdout.splitlines()[0]
    assert "FAILED, fails under every schedule tried: not a race: TypeError: this counter refuses" in line, line
    assert "\n  fails under every schedule tried: not a race\n" in out.stdout
    assert "0 races found, 1 cell failing under every schedule tried (not a race)" in out.stdout
    doc = json.loads((tmp_path / "results.json").read_text())
    assert doc["cells"][0]["verdict"] == "not-a-race" and doc["summary"]["not_a_race"] == 1
    assert doc["cells"][0]["failures"][0]["depends_on_schedule"] is False
    message = ET.parse(tmp_path / "junit.xml").getroot().find("testsuite/testcase/failure").get("message")
    assert message.startswith("fails under every schedule tried: not a race: TypeError")
    assert "fails under every schedule tried: not a race" in (tmp_path / "index.html").read_text()

    token = TOKEN.search(out.stdout).group(1)
    again = racecheck_subprocess("replay", token)
    assert again.returncode == 1, again.stderr
    assert "FAILURE REPRODUCED at schedule #0 (fails under every schedule tried: not a race)" in again.stdout


def test_lightning_18_writer_on_windows_shows_the_leak_and_winerror_32_together():
    """--max-failures shows the leak and the seed report's error together; at one failure per cell, with every
    default (memory watched), the seed report's error is the one found (issue 47: the decisions that cannot conflict
    no longer dilute pct's change points, which had left it behind the leak)."""
    pytest.importorskip("lightning")
    legacy = "racecheck.scenarios.legacy:Lightning18AsyncCheckpointIO"
    out = invoke("run", "delete-while-writing", "--target", legacy, "--fs", "windows", "--schedules", "400",
                 "--max-failures", "5")
    assert out.exit_code == 1, out.output
    found = re.search(r"RACE FOUND, (\d) distinct failures at schedules #", out.stdout)
    assert found and int(found[1]) >= 2, out.stdout  # two racing pairs can end in WinError 32: distinct failures
    listed = re.findall(rf"  \[\d/{found[1]}\] (.*)", out.stdout)
    assert "AssertionError: leaked checkpoint(s) ['a.ckpt']: removed, then written anyway" in listed, listed
    assert any(line.startswith("PermissionError: [WinError 32] The process cannot access the file") for line in listed)
    one = invoke("run", "delete-while-writing", "--target", legacy, "--fs", "windows", "--schedules", "200")
    assert "RACE FOUND at schedule #" in one.stdout, one.stdout
    assert "  PermissionError: [WinError 32] The process cannot access the file" in one.stdout, one.stdout
