"""What every command shares: resolving the catalogue, scenarios, targets and options into cells, refusing bad input
as an :class:`InputError` (one line, exit status 2), and the text that describes a finished cell.

``run``, ``replay``, ``gate`` and ``demo`` describe a cell with the same :func:`cell_line` and a failure with the same
:func:`failure_block`, so the same schedule reads the same whichever command showed it.
"""

from __future__ import annotations

import importlib
import os
import shlex
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import click
from racecheck.frontends import parallel
from racecheck.report.model import CellResult, FailureRecord
from racecheck.report.words import count
from racecheck.search.data_races import DataRace, race_lines
from racecheck.search.scope import Scope

__racecheck_engine__ = True


class InputError(Exception):
    """Bad input detected by the CLI itself; becomes one line on stderr and exit status 2."""


def one_line(text: str) -> str:
    """``text`` with its lines joined by single spaces (an error or an oracle always prints as one line)."""
    return " ".join(part.strip() for part in str(text).splitlines() if part.strip()) or "error"


# ----- resolving what to explore -------------------------------------------------------------------------------------


def load_catalogue(name: str | None = None) -> Any:
    """The scenario catalogue module ``name`` (default: ``RACECHECK_CATALOGUE`` or the built-in one)."""
    name = name if name is not None else parallel.catalogue_name()
    try:
        return parallel.load_catalogue(name)
    except Exception as exc:  # noqa: BLE001 - a missing extra or a broken plug-in catalogue
        where = name or parallel.DEFAULT_CATALOGUE
        raise InputError(f"cannot load the scenario catalogue {where!r}: {type(exc).__name__}: {exc}")


def find_scenario(catalogue: Any, name: str) -> Any:
    """The scenario ``name`` of the catalogue."""
    try:
        return catalogue.get(name)
    except catalogue.ScenarioError as exc:
        raise InputError(str(exc))


def load_target(catalogue: Any, spec: str) -> Any:
    """The target ``MOD:ATTR`` loaded through the catalogue (importing user code)."""
    try:
        return catalogue.load_target(spec)
    except catalogue.ScenarioError as exc:
        hint = "; racecheck explore MODULE:FUNCTION explores any zero-argument function" if (
            "not a CheckpointIO" in str(exc) or "neither a CheckpointIO" in str(exc)) else ""
        raise InputError(f"{exc}{hint}")
    except Exception as exc:  # noqa: BLE001 - whatever importing user code raised
        raise InputError(f"cannot load target {spec!r}: {type(exc).__name__}: {exc}")


def check_instrument(modules: Sequence[str]) -> None:
    """Every ``--instrument`` module imports here, before any work starts."""
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception as exc:  # noqa: BLE001
            raise InputError(f"--instrument {name!r}: cannot import it: {type(exc).__name__}: {exc}")


def scenario_semantics(scenario: Any, fs: str) -> tuple[str, ...]:
    """The file-system semantics ``--fs fs`` runs the scenario under (none when it does not support it)."""
    if fs == "both":
        return tuple(getattr(scenario, "default_semantics", None) or scenario.semantics)
    return (fs,) if fs in scenario.semantics else ()


def prebuild(catalogue_name: str | None, cell: parallel.Cell) -> None:
    """Build each cell here first, so a target the scenario cannot use is a one-line error before any work starts."""
    catalogue = load_catalogue(catalogue_name)
    try:
        parallel.prepare(catalogue_name, cell.scenario, cell.target, cell.fs, cell.instrument)
    except catalogue.ScenarioError as exc:
        raise InputError(str(exc))


def prepare_report_dir(directory: str | None) -> None:
    """Create the ``--report`` directory (or refuse it) before any work starts."""
    if directory is None:
        return
    if os.path.exists(directory) and not os.path.isdir(directory):
        raise InputError(f"--report {directory!r} exists and is not a directory")
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as exc:
        raise InputError(f"--report {directory!r}: cannot create it: {exc.strerror or exc}")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise InputError(f"--report {directory!r} is not writable")


# ----- output ------------------------------------------------------------------------------------------------------


NOT_A_RACE = "fails under every schedule tried: not a race"


def failure_block(cell: CellResult, failure: FailureRecord | None = None, position: int = 0) -> str:
    """What a person needs about one failure (the cell's first by default): message, where, the verdict when it is
    not a race, the replay command, the trace, the racing pair. ``position`` (1-based) numbers it among several.
    ``run`` and ``replay`` print the same block for the same schedule."""
    f = failure or cell.failure
    assert f is not None
    where = f" in {f.thread}" if f.thread else ""
    number = f"[{position}/{len(cell.failures)}] " if position else ""
    verdict = f"  {NOT_A_RACE}\n" if f.not_a_race else ""
    if f.undecided:
        verdict += f"  {f.undecided}\n"
    if f.incomplete:
        verdict += f"  [{f.incomplete}]\n"
    return (
        f"  {number}{f.message}\n"
        f"  {f.kind}{where}, schedule #{f.schedule_index}, {count(f.preemptions, 'preemption')}, "
        f"{count(f.steps, 'step')}\n"
        f"{verdict}"
        f"  replay with: racecheck replay {f.token}\n"
        f"{f.trace}"
    ) + (f"\n  {f.race_text}" if f.race_text else "") + "".join(f"\n  {note}" for note in f.notes)


def failure_blocks(cell: CellResult, quiet: bool = False) -> list[str]:
    """Every distinct failure of the cell: its block, or with ``quiet`` its replay command only."""
    if quiet:
        return [f"  replay with: racecheck replay {f.token}" for f in cell.failures]
    if len(cell.failures) == 1:
        return [failure_block(cell)]
    return [failure_block(cell, f, i) for i, f in enumerate(cell.failures, 1)]


def _coverage(cell: CellResult) -> str:
    return f"{count(cell.schedules, 'schedule')}, {count(cell.interleavings, 'interleaving')}"


def cell_line(cell: CellResult) -> str:
    """One line per explored cell: race found (where, after how much), a failure that is not a race (with its
    exception), or clean (coverage, throughput)."""
    how = f"({cell.strategy}, seed {cell.seed})"
    if cell.verdict == "hang":
        f = next(f for f in cell.failures if f.hang)
        return (f"{cell.label}: HANG (an uncontrolled wait, not a race) at schedule #{f.schedule_index} {how} after "
                f"{_coverage(cell)}")
    if cell.verdict == "not-a-race":
        f = cell.failures[0]
        more = f" (and {count(len(cell.failures) - 1, 'more distinct failure', 'more distinct failures')})" \
            if len(cell.failures) > 1 else ""
        return (f"{cell.label}: FAILED, {NOT_A_RACE}: {one_line(f.message)}{more}; first at schedule "
                f"#{f.schedule_index} {how} after {_coverage(cell)}")
    if cell.failure is not None:
        if len(cell.failures) == 1:
            return f"{cell.label}: RACE FOUND at schedule #{cell.failure.schedule_index} {how} after {_coverage(cell)}"
        at = ", ".join(f"#{f.schedule_index}" for f in cell.failures)
        races = len(cell.races)
        kinds = f"{count(races, 'race')}, {len(cell.failures) - races} not a race" if races < len(cell.failures) else ""
        detail = f" ({kinds})" if kinds else ""
        return (f"{cell.label}: RACE FOUND, {len(cell.failures)} distinct failures{detail} at schedules {at} {how} "
                f"after {_coverage(cell)}")
    note = f", {cell.exhausted_note}" if cell.exhausted else ""
    if cell.budget_stopped:
        note = f" (time budget: {cell.schedules} of {cell.requested})"
    rate = cell.schedules_per_second
    return f"{cell.label}: clean, {_coverage(cell)} {how}{note}, {rate:.{1 if rate < 10 else 0}f} schedules/s"


def scope_lines(cell: CellResult) -> list[str]:
    """What a cell's verdict covered and the data races it showed, as ``Result.summary()`` prints them."""
    lines = [f"  {Scope.from_dict(cell.coverage).text()}"] if cell.coverage else []
    return lines + [f"  {line}" for line in race_lines(DataRace.from_dict(race) for race in cell.data_races)]


def write_reports(directory: str | None, cells: list[CellResult], run: dict,
                  verdicts: Mapping[tuple[str, str, str], str] | None = None, title: str = "") -> None:
    """results.json, junit.xml and index.html in ``--report DIR`` (nothing without it), then one line naming them."""
    if directory is None:
        return
    from racecheck.report import write_reports as write

    command = "racecheck " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    paths = write(directory, cells, command, run, verdicts, title or "racecheck report")
    click.echo(f"report: {', '.join(paths)}")
