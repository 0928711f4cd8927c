"""Cutting cells into fixed chunks of schedules, handing them out, and putting their answers back together, so that
``--jobs 1``, ``--jobs 8`` and any set of gateways report the same failures with the same tokens.

The N schedules of a cell are cut into chunks of ``CHUNK`` (a systematic strategy, dfs or dpor, whose next schedule
depends on every earlier one, cannot be cut and is one unit: ``registry.is_systematic``). Chunk k always
runs ``explore(schedules=CHUNK, seed=chunk_seed(seed, k))`` and its schedule i is global schedule ``k*CHUNK + i``,
whoever runs it. A cell asks for ``max_failures`` distinct failures (1 by default): its answer is read from its
chunks in order, merging each chunk's distinct failures into the cell's (the engine's rule: the same signature and,
when both name one, the same racing pair), and stops at the first chunk where the cell has enough or the space was
exhausted. Later chunks add nothing to that answer, so the dispatcher stops handing them out as soon as it knows
where the answer stops (a chunk that alone has enough, or a finished prefix that has enough), and whatever a
concurrent worker explored beyond it is left out.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from racecheck.frontends.clitoken import CliToken, replay_options
from racecheck.report.model import CellResult, FailureRecord
from racecheck.search.data_races import DataRace
from racecheck.search.registry import is_systematic
from racecheck.search.scope import Scope

if TYPE_CHECKING:
    from racecheck.frontends.parallel import Cell

__racecheck_engine__ = True

CHUNK = 25


def chunk_seed(seed: int, chunk: int) -> int:
    """The seed of chunk ``chunk``: a function of (seed, chunk) only, identical on every machine."""
    digest = hashlib.sha256(f"racecheck-cli:{seed}:{chunk}".encode()).hexdigest()
    return int(digest[:12], 16)


def wanted(cell: Cell) -> int:
    """How many distinct failures the cell asks for (its ``max_failures`` option, 1 by default)."""
    return int(dict(cell.options).get("max_failures", 1))


def plan(cells: Sequence[Cell]) -> list[dict]:
    """All units of all cells, in the order they are handed out."""
    units = []
    for index, cell in enumerate(cells):
        common = {
            "cell": index,
            "catalogue": cell.catalogue,
            "scenario": cell.scenario,
            "target": cell.target,
            "fs": cell.fs,
            "instrument": list(cell.instrument),
            "strategy": cell.strategy,
            "options": dict(cell.options),
        }
        if is_systematic(cell.strategy):
            units.append({**common, "chunk": 0, "base": 0, "seed": cell.seed, "schedules": cell.schedules})
            continue
        for chunk, base in enumerate(range(0, cell.schedules, CHUNK)):
            size = min(CHUNK, cell.schedules - base)
            units.append(
                {**common, "chunk": chunk, "base": base, "seed": chunk_seed(cell.seed, chunk), "schedules": size}
            )
    return units


def merge(into: list[FailureRecord], found: Sequence[FailureRecord]) -> None:
    """Add a chunk's distinct failures to the cell's: another occurrence of a known one is counted on it."""
    for record in found:
        known = next((f for f in into if f.same_failure(record)), None)
        if known is None:
            into.append(record)
        else:
            known.occurrences += record.occurrences


def _records(result: dict) -> list[FailureRecord]:
    return [FailureRecord.from_dict(item) for item in result.get("failures") or ()]


class Dispatcher:
    """Hands out units in order and stops a cell's units once its answer is known (see the module docstring);
    ``time_budget`` is checked only between units, so what is explored is always a prefix of the same sequence."""

    def __init__(self, units: list[dict], time_budget: float | None, wanted: Sequence[int]) -> None:
        self.units = deque(units)
        self.lock = threading.Lock()
        self.wanted = list(wanted)  # per cell: distinct failures asked for
        self.stop_at: dict[int, int] = {}  # cell -> the chunk its answer stops at, once known
        self.parts: dict[int, dict[int, dict]] = {}  # cell -> chunk -> result
        self.time_budget = time_budget
        self.started = time.monotonic()
        self.budget_hit = False

    def next_unit(self) -> dict | None:
        with self.lock:
            while self.units:
                if self.time_budget is not None and time.monotonic() - self.started >= self.time_budget:
                    self.budget_hit = True
                    self.units.clear()
                    return None
                unit = self.units.popleft()
                stop = self.stop_at.get(unit["cell"])
                if stop is not None and unit["chunk"] > stop:
                    continue
                return unit
            return None

    def record(self, unit: dict, result: dict) -> None:
        if "error" in result:
            return
        cell, chunk = unit["cell"], unit["chunk"]
        with self.lock:
            parts = self.parts.setdefault(cell, {})
            parts[chunk] = result
            enough = len(result.get("failures") or ()) >= self.wanted[cell]
            if result.get("exhausted") or enough:  # later chunks would add nothing
                self._stop(cell, chunk)
                return
            merged: list[FailureRecord] = []
            k = 0
            while k in parts:  # the finished prefix: does it already hold enough distinct failures?
                merge(merged, _records(parts[k]))
                if len(merged) >= self.wanted[cell]:
                    self._stop(cell, k)
                    return
                k += 1

    def _stop(self, cell: int, chunk: int) -> None:
        self.stop_at[cell] = min(self.stop_at.get(cell, chunk), chunk)


def merge_races(known: list[dict], part: dict) -> list[dict]:
    """The cell's data races with a chunk's added: one per object kind, operations and lines, first found first."""
    out = list(known)
    keys = {DataRace.from_dict(race).key() for race in out}
    for race in part.get("data_races") or ():
        key = DataRace.from_dict(race).key()
        if key not in keys:
            keys.add(key)
            out.append(race)
    return out


def merge_coverage(cell: CellResult, part: dict) -> dict | None:
    """The cell's coverage statement with a chunk's read in: the cell's own counts, every chunk's escapes."""
    said = part.get("coverage")
    if not said:
        return cell.coverage
    scope = Scope.from_dict(said)
    escaped = tuple(dict.fromkeys((*(cell.coverage or {}).get("escaped", ()), *scope.escaped)))
    space = "exhausted" if cell.exhausted else "sampled"
    return replace(scope, space=space, schedules=cell.schedules, interleavings=cell.interleavings,
                   escaped=escaped).to_dict()


def assemble(index: int, cell: Cell, results: dict[tuple[int, int], dict]) -> CellResult:
    """The cell's answer from its chunks' results, read in chunk order (see the module docstring)."""
    limit = wanted(cell)
    out = CellResult(
        scenario=cell.scenario,
        target=cell.target,
        fs=cell.fs,
        strategy=cell.strategy,
        seed=cell.seed,
        requested=cell.schedules,
        oracle=cell.oracle,
        max_failures=limit,
    )
    chunk = 0
    keys: set[str] = set()
    digests: set[str] = set()
    failures: list[FailureRecord] = []
    while (index, chunk) in results:
        part = results[(index, chunk)]
        out.schedules += part["schedules"]
        out.executions += part["executions"]
        out.elapsed += part["elapsed"]
        keys.update(part.get("interleaving_keys", ()))
        digests.update(part.get("schedule_digests", ()))
        out.interleavings, out.distinct = len(keys), len(digests)
        if part["exhausted"]:  # the whole space, in this one unit: later chunks (run or not) add nothing
            out.exhausted, out.exhausted_note = True, part.get("exhausted_note", "")
        merge(failures, _records(part))
        out.data_races, out.coverage = merge_races(out.data_races, part), merge_coverage(out, part)
        if len(failures) >= limit or out.exhausted:
            break
        chunk += 1
    for failure in failures[:limit]:
        failure.token = CliToken(
            cell.scenario, cell.fs, cell.target, failure.engine_token, failure.schedule_index,
            cell.instrument, cell.catalogue, replay_options(cell.options),
        ).encode()
    out.set_failures(failures[:limit])
    out.budget_stopped = len(out.failures) < limit and not out.exhausted and out.schedules < out.requested
    return out
