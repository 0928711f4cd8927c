"""Every access carries its own source line, in traces and in data-race reports, whatever kind of access it is
(attribute, slot, dataclass field, item, global, closure cell, container method, membership, length, iteration,
deletion, augmented assignment) and whether it was a step of its own or joined the step that ran (issue 49: a
yield noted after a step's merged accesses put each of their lines one access off, so a race read ``@file:19`` for
a read at line 24)."""

from __future__ import annotations

import linecache
import re
import sys
from pathlib import Path

import pytest
import racecheck
from racecheck import runtime
from racecheck.runtime.relation import Role, active

sys.path.insert(0, str(Path(__file__).resolve().parent))
import access_line_programs  # noqa: E402

SOURCE = access_line_programs.__file__
_MARK = re.compile(r"# A:(\w+)")


def _marker(location: str) -> str | None:
    """The object name the program's line at ``location`` says its access touches (None: an unmarked line)."""
    assert location, "an access without a source line"
    path, _, line = location.rpartition(":")
    assert path.endswith("access_line_programs.py"), location
    found = _MARK.search(linecache.getline(SOURCE, int(line)))
    return found.group(1) if found else None


# a line touching an item also touches its container's entries (a store may add the key, a deletion remove it)
_CONTAINER = {"k_item": "dict#"}


def _check(obj_text: str, location: str) -> None:
    marker = _marker(location)
    named = marker is not None and (marker in obj_text or obj_text.startswith(_CONTAINER.get(marker, "?")))
    assert named, f"{obj_text} reported @{location}: that line touches {marker}"


seen_accesses: list[tuple[str, str]] = []


def every_kind_reading_its_trace() -> None:
    """The program, then every memory access its threads made as the trace records it, with its source line:
    own accesses take their step's line, merged ones the line kept for their point."""
    access_line_programs.every_kind()
    run = runtime.current_run()
    if not run.locate:  # a run before the schedules (memory watching's warm-up) has no lines to check
        return
    where = run.memory_steps.where or {}
    relation = active()
    for event in run.trace:
        if event.tid == 0 or not event.access:
            continue
        own = len(event.access) - len(event.marks)
        for position, access in enumerate(event.access):
            if relation.role(access.obj) != Role.DATA:
                continue
            loc = event.loc if position < own else where.get((event.tid, event.marks[position - own]), "")
            seen_accesses.append((access.obj.text, loc))


@pytest.mark.parametrize("strategy", ["random", "pct", "dpor"])
def test_every_access_in_a_trace_carries_its_own_line(strategy):
    seen_accesses.clear()
    racecheck.explore(every_kind_reading_its_trace, strategy=strategy, schedules=12, locations="always",
                      max_failures=100, shrink_budget=0, race_budget=0)
    assert len(seen_accesses) > 100
    kinds = set()
    for obj_text, loc in seen_accesses:
        if "Plain" in obj_text and "a_list" in obj_text:
            continue  # the attribute read on the list's line: checked by the list's own access
        _check(obj_text, loc)
        kinds.add(_marker(loc))
    assert kinds == {"a_val", "k_item", "G_COUNT", "c_cell", "s_val", "d_val", "list", "set"}


@pytest.mark.parametrize("strategy", ["random", "pct"])
def test_every_data_race_names_the_lines_of_both_accesses(strategy):
    result = racecheck.explore(access_line_programs.every_kind, strategy=strategy, schedules=40,
                               max_failures=100, shrink_budget=0, race_budget=0)
    assert len(result.data_races) > 20, result.summary()
    for race in result.data_races:
        for side in (race.first, race.second):
            _check(race.obj, side.location)
