"""Data races and the coverage statement in `racecheck run`: printed under the cell (the same for --jobs 1 and 2),
written to results.json; `--data-races fail` fails the cell with a token `racecheck replay` reproduces."""

from __future__ import annotations

import inspect
import json

import pytest
from cli_helpers import invoke, racecheck_subprocess


@pytest.fixture
def races(stub, monkeypatch):
    monkeypatch.setenv("RACECHECK_CATALOGUE", "cli_race_catalogue")
    import cli_race_catalogue

    return cli_race_catalogue


def _line(catalogue) -> str:
    lines, first = inspect.getsourcelines(catalogue._unlocked)
    offset = next(k for k, text in enumerate(lines) if "counter.n += 1" in text)
    return f"cli_race_catalogue.py:{first + offset}"


def test_a_passing_cell_prints_its_data_races_and_coverage(races, tmp_path):
    out = invoke("run", "unlocked-count", "--schedules", "30", "--report", str(tmp_path))
    assert out.exit_code == 0, out.output  # reported, not failing
    line = _line(races)
    assert "  covered: " in out.stdout and "; watched: " in out.stdout
    assert "  data races: 2" in out.stdout
    assert f"data race on RacyCounter#1.n: T1 write @{line} and T2 " in out.stdout
    doc = json.loads((tmp_path / "results.json").read_text())
    cell = doc["cells"][0]
    assert doc["summary"]["data_races"] == 2 == len(cell["data_races"])
    first = cell["data_races"][0]
    assert first["obj"] == "RacyCounter#1.n" and first["first"]["location"] == line and not first["benign"]
    assert set(first) == {"obj", "first", "second", "schedule", "token", "benign"}
    assert set(first["first"]) == {"thread", "op", "location", "step"}
    assert cell["coverage"]["space"] == "sampled" and cell["coverage"]["text"].startswith("covered: ")
    two = racecheck_subprocess("run", "unlocked-count", "--schedules", "30", "--jobs", "2")
    assert two.returncode == 0, two.stderr
    pick = lambda text: [ln for ln in text.splitlines() if "data race" in ln]  # noqa: E731
    assert pick(two.stdout) == pick(out.stdout)


def test_fail_fails_the_cell_and_the_replay_reproduces_it(races):
    out = invoke("run", "unlocked-count", "--schedules", "30", "--data-races", "fail", "-q")
    assert out.exit_code == 1, out.output
    token = next(word for word in out.stdout.split() if word.startswith("rcc1."))
    again = racecheck_subprocess("replay", token)
    assert again.returncode == 1, again.stderr
    assert "DataRaceError: data race on RacyCounter#1.n" in again.stdout
    quiet = invoke("run", "unlocked-count", "--schedules", "30", "--data-races", "ignore")
    assert quiet.exit_code == 0 and "data race" not in quiet.stdout
