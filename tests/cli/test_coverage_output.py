"""Coverage in `racecheck run`: distinct interleavings live in the progress bar and in every cell line, and a small
space that random/pct run to its end is reported as exhausted (stdout, results.json, junit.xml) with the same
numbers for --jobs 1 and --jobs 2. The space is checked against the engine's own unbounded dfs."""

from __future__ import annotations

import io
import json
import re
import xml.etree.ElementTree as ET

import pytest
import racecheck
from cli_helpers import invoke, racecheck_subprocess
from racecheck.frontends.cli.progress import LiveProgress
from racecheck.search.coverage import Progress as Snapshot


@pytest.fixture
def tiny(stub, monkeypatch):
    monkeypatch.setenv("RACECHECK_CATALOGUE", "cli_tiny_catalogue")
    import cli_tiny_catalogue

    return cli_tiny_catalogue


def _space(catalogue) -> racecheck.Result:
    """Every schedule of the scenario, enumerated by unbounded dfs."""
    prepared = catalogue.get("lock-handoff").build(catalogue.load_target(catalogue.STOCK_TARGET), "real")
    full = racecheck.explore(prepared.fn, strategy="dfs", preemption_bound=None, schedules=10_000,
                             **prepared.explore_kwargs)
    assert full.ok and full.exhausted
    return full


@pytest.mark.parametrize("strategy", ["random", "pct"])
def test_a_small_space_is_run_once_per_schedule_and_reported_exhausted(tiny, tmp_path, strategy):
    full = _space(tiny)
    out = invoke("run", "lock-handoff", "--strategy", strategy, "--schedules", "1000", "--report", str(tmp_path))
    assert out.exit_code == 0, out.output
    n, k = full.schedules, full.interleavings
    assert (f"clean, {n} schedules, {k} interleavings ({strategy}, seed 0), exhausted: all {n} distinct schedules "
            "explored, ") in out.stdout
    assert f"1 cell, {n} schedules, {k} interleavings, 0 races found, 1 exhausted" in out.stdout

    cell = json.loads((tmp_path / "results.json").read_text())["cells"][0]
    assert (cell["schedules"], cell["interleavings"], cell["distinct_schedules"]) == (n, k, n)
    assert cell["exhausted"] and cell["exhausted_note"] == f"exhausted: all {n} distinct schedules explored"
    props = {p.get("name"): p.get("value") for p in ET.parse(tmp_path / "junit.xml").getroot().iter("property")}
    assert props["interleavings"] == str(k) and props["exhausted"] == cell["exhausted_note"]
    assert f"exhausted: all {n} distinct schedules explored" in (tmp_path / "index.html").read_text()


def test_exhaustion_and_interleavings_are_the_same_with_two_processes(tiny):
    one = invoke("run", "lock-handoff", "--schedules", "500", "-q")
    two = racecheck_subprocess("run", "lock-handoff", "--schedules", "500", "-q", "--jobs", "2")
    assert one.exit_code == two.returncode == 0, two.stderr
    strip = re.compile(r", [\d.]+ schedules/s")
    assert strip.sub("", one.stdout) == strip.sub("", two.stdout)
    assert "exhausted: all " in one.stdout


def test_a_space_larger_than_the_budget_is_not_called_exhausted(stub):
    out = invoke("run", "lost-update", "--target", "cli_stub_catalogue:LockedCounter", "--strategy", "random",
                 "--schedules", "30", "-q")
    assert out.exit_code == 0, out.output
    # 21 classes in all (dpor: the bare point inside the lock conflicts with every step of the other thread)
    assert "clean, 30 schedules, 17 interleavings (random, seed 0), " in out.stdout and "exhausted" not in out.stdout


def test_progress_bar_shows_interleavings_live_on_a_terminal(tiny, monkeypatch):
    full = _space(tiny)
    monkeypatch.setenv("TTY_COMPATIBLE", "1")  # rich draws the bar as on an interactive terminal
    out = invoke("run", "lock-handoff", "--target", "cli_stub_catalogue:LockedCounter", "--schedules", "40")
    assert out.exit_code == 0, out.output
    screen = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.stderr)  # rich's colours and cursor moves
    frames = re.findall(r"(\d+)/(\d+) schedules, (\d+) interleavings?, \d+/s, 0 races", screen)
    assert ("1", "40", "1") in frames, screen  # drawn after the first schedule, while exploring
    last = tuple(map(int, frames[-1]))
    assert last == (full.schedules, full.schedules, full.interleavings), screen  # exhausted: the bar completes
    quiet = invoke("run", "lock-handoff", "--schedules", "40", "-q")
    assert "interleavings, " not in quiet.stderr  # --quiet: no bar


def _snapshot(schedules: int, key: str, failed: bool = False) -> Snapshot:
    return Snapshot(schedules=schedules, requested=50, interleavings=0, distinct=schedules, failures=0,
                    exhausted=False, index=schedules - 1, interleaving=key, schedule=str(schedules), failed=failed)


def test_progress_counts_are_the_union_over_chunks_and_processes():
    from rich.console import Console

    screen = io.StringIO()
    progress = LiveProgress([50, 50], enabled=True, console=Console(file=screen, force_terminal=True, width=200))
    cell0 = {"cell": 0, "chunk": 0}
    for i, key in enumerate(["a", "b", "a"], start=1):  # schedule by schedule, in this process
        progress.schedule(cell0, _snapshot(i, key))
    assert (progress.done, progress.interleavings, progress.failures) == (3, 2, 0)
    # a chunk of cell 0 that ran in another process: only its final answer arrives
    progress.update({"cell": 0, "chunk": 1}, {"schedules": 25, "interleaving_keys": ["b", "c"], "failures": []})
    progress.update({"cell": 1, "chunk": 0}, {"schedules": 4, "interleaving_keys": ["a"], "failures": [{"x": 1}],
                                              "exhausted": False})
    assert (progress.done, progress.interleavings, progress.failures) == (28 + 4 - 0, 3 + 1, 1)
    # cell 0's first chunk ends having run its whole space: chunk 1 (run beside it) and the rest leave the total
    progress.update(cell0, {"schedules": 3, "interleaving_keys": ["a", "b"], "failures": [], "exhausted": True})
    assert progress.done == 3 + 4 and progress.total == 3 + 50
    progress.close()
    assert "7/53 schedules, 4 interleavings" in re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", screen.getvalue())
