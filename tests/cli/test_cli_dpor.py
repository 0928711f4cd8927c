"""`racecheck run --strategy dpor`: finds the race, proves the fix with the classes counted, and a cell of it is one
unit under --jobs (its next schedule depends on all the earlier ones), so two processes report what one does."""

from __future__ import annotations

import re

from cli_helpers import invoke, racecheck_subprocess


def test_dpor_finds_the_race_and_proves_the_fix(stub):
    found = invoke("run", "lost-update", "--strategy", "dpor")
    assert found.exit_code == 1, found.output
    assert "RACE FOUND" in found.stdout and "(dpor, seed 0)" in found.stdout
    clean = invoke("run", "lost-update", "--target", "cli_stub_catalogue:LockedCounter", "--strategy", "dpor")
    assert clean.exit_code == 0, clean.output
    assert re.search(r"exhausted: all \d+ class(es)? of equivalent interleavings explored", clean.stdout), clean.stdout


def test_dpor_is_one_unit_under_jobs(stub):
    args = ["run", "lost-update", "--target", "cli_stub_catalogue:LockedCounter", "--strategy", "dpor", "-q",
            "--schedules", "1000"]
    one = invoke(*args, "--jobs", "1")
    two = racecheck_subprocess(*args, "--jobs", "2")
    assert one.exit_code == two.returncode == 0, (one.output, two.stderr)
    strip = re.compile(r", \d+ schedules/s")
    cells = [[strip.sub("", line) for line in out.splitlines() if " on cli_stub_catalogue:" in line]
             for out in (one.stdout, two.stdout)]
    assert cells[0] == cells[1] and cells[0]
    assert "exhausted" in cells[0][0]
