"""The SCTBench ports (``programs.py``: 30 buggy programs of github.com/mc-imperial/sctbench and their correct
twins) with no marks at all: no ``racecheck.point()``, no ``preempt="lines"``, only what memory watching sees.

pct finds at least 27 of the 30 bugs (with the expected kind: an assertion, another exception, a deadlock); dpor
finds every one and proves every correct twin (``exhausted``); and no strategy says ``exhausted`` and clean about a
program with a bug.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import racecheck

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sctbench.programs import PROGRAMS, Program, failure_kind  # noqa: E402

BUGGY = [p for p in PROGRAMS if p.buggy]
CORRECT = [p for p in PROGRAMS if not p.buggy]


def _explore(program: Program, strategy: str, schedules: int) -> racecheck.Result:
    return racecheck.explore(program.fn, strategy=strategy, schedules=schedules, seed=0, shrink_budget=0,
                             race_budget=0, max_steps=20000)


def test_the_port_has_thirty_buggy_programs_and_no_marks():
    assert len(BUGGY) == 30
    source = (Path(__file__).parent / "programs.py").read_text()
    assert "racecheck.point" not in source and "preempt=" not in source


def test_pct_finds_at_least_27_of_the_30_bugs_with_no_marks():
    found = [p.name for p in BUGGY if failure_kind(_explore(p, "pct", 1000)) == p.bug]
    missed = sorted({p.name for p in BUGGY} - set(found))
    print(f"pct, 1000 schedules, no marks: {len(found)}/30 found; missed: {missed}")
    assert len(found) >= 27, missed


@pytest.mark.parametrize("program", BUGGY, ids=lambda p: p.name)
def test_dpor_finds_every_bug(program):
    result = _explore(program, "dpor", 20_000)
    assert failure_kind(result) == program.bug, result.summary()


@pytest.mark.parametrize("program", CORRECT, ids=lambda p: p.name)
def test_dpor_proves_every_correct_twin(program):
    result = _explore(program, "dpor", 20_000)
    assert result.ok and result.exhausted, result.summary()


@pytest.mark.parametrize("strategy", ["random", "pct", "pos", "dpor"])
def test_no_strategy_calls_a_buggy_program_exhausted_and_clean(strategy):
    wrong = [p.name for p in BUGGY if (result := _explore(p, strategy, 1000)).ok and result.exhausted]
    assert wrong == []
