"""The PR regression gate's judgement: the committed baseline, its strict reader, and the comparison of a run against
it. Running the cells and the reference workload is the front end's job (:mod:`racecheck.frontends.cli.gate`); this
module only reads and compares.

A baseline (``reports/baseline.json``, schema ``racecheck-baseline/1``, documented in reports/SCHEMA.md) lists
cells with their expected verdict, ``race`` (a known-buggy target: the harness must still catch it) or ``clean``
(a fixed target: it must stay clean), and a reference throughput. Throughput is compared as a ratio: a cell's
executions per second divided by the executions per second of :mod:`racecheck.frontends.cli.reference`, measured
in the same gate run, so a slower machine does not fail the gate but a slower harness does. A cell regresses when its
ratio falls below ``relative_throughput * (1 - tolerance)``.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass

from racecheck.report.model import CellResult
from racecheck.report.words import count
from racecheck.search.registry import STRATEGY_NAMES, is_systematic

__racecheck_engine__ = True

SCHEMA = "racecheck-baseline/1"
MAX_BASELINE_BYTES = 1 << 20
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,100}$")
_TARGET = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*:[A-Za-z_][A-Za-z0-9_.]*$")
_MODULE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


class BaselineError(Exception):
    """The baseline file is unreadable or malformed; the message is one line naming the problem."""


@dataclass(frozen=True)
class Expectation:
    scenario: str
    target: str
    fs: str
    strategy: str
    seed: int
    schedules: int
    expect: str  # "race" | "clean"
    relative_throughput: float | None
    shrink_budget: int | None = None
    max_failures: int = 1  # distinct failures the cell's exploration looks for
    # with expect "race": the distinct failures that must be found, each a prefix of a failure's message
    # ("ExceptionType: text"); every failure found must match one of them. None: not compared
    expect_failures: tuple[str, ...] | None = None
    # with expect "clean" and a systematic strategy (dfs, dpor): the cell is a proof, and must stay one (its whole
    # space explored within its schedules); a space that outgrew the budget fails the gate instead of passing on a
    # sample
    expect_exhausted: bool = False
    memory: bool = True  # plain memory accesses are scheduling points (explore's ``memory``)

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.scenario, self.target, self.fs)


@dataclass(frozen=True)
class Baseline:
    tolerance: float
    reference_schedules: int
    cells: tuple[Expectation, ...]
    raw: dict


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise BaselineError(message)


def _int(value: object, lo: int, hi: int) -> bool:
    return type(value) is int and lo <= value <= hi


def _number(value: object) -> bool:
    return type(value) in (int, float) and math.isfinite(value)  # type: ignore[arg-type]


def parse(text: str | bytes, source: str = "baseline") -> Baseline:
    """Validate a baseline document; every problem is a BaselineError naming the field."""
    if isinstance(text, bytes):
        _require(len(text) <= MAX_BASELINE_BYTES, f"{source}: larger than {MAX_BASELINE_BYTES} bytes")
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError:
            raise BaselineError(f"{source}: not UTF-8 text") from None
    _require(len(text) <= MAX_BASELINE_BYTES, f"{source}: larger than {MAX_BASELINE_BYTES} bytes")
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise BaselineError(f"{source}: not valid JSON ({detail})") from None
    _require(isinstance(data, dict), f"{source}: the top level must be an object")
    _require(data.get("schema") == SCHEMA, f"{source}: 'schema' must be {SCHEMA!r}")
    allowed = {"schema", "tolerance", "reference", "cells", "comment"}
    unknown = sorted(set(data) - allowed)
    _require(not unknown, f"{source}: unknown field {unknown[0]!r}" if unknown else "")
    tolerance = data.get("tolerance")
    _require(_number(tolerance) and 0 <= tolerance < 1, f"{source}: 'tolerance' must be a number in [0, 1)")
    reference = data.get("reference")
    _require(isinstance(reference, dict), f"{source}: 'reference' must be an object")
    _require(set(reference) <= {"schedules", "comment"}, f"{source}: 'reference' has an unknown field")
    ref_schedules = reference.get("schedules")
    _require(_int(ref_schedules, 1, 100000), f"{source}: 'reference.schedules' must be an integer in 1..100000")
    cells = data.get("cells")
    _require(isinstance(cells, list) and cells, f"{source}: 'cells' must be a non-empty list")
    out = []
    seen = set()
    for i, cell in enumerate(cells):
        where = f"{source}: cells[{i}]"
        _require(isinstance(cell, dict), f"{where} must be an object")
        fields = {"scenario", "target", "semantics", "strategy", "seed", "schedules", "expect",
                  "relative_throughput", "shrink_budget", "max_failures", "expect_failures", "expect_exhausted",
                  "memory", "comment"}
        unknown = sorted(set(cell) - fields)
        _require(not unknown, f"{where}: unknown field {unknown[0]!r}" if unknown else "")
        for name in ("scenario", "semantics"):
            _require(isinstance(cell.get(name), str) and bool(_NAME.match(cell[name])),
                     f"{where}: {name!r} must be a name ([A-Za-z0-9_-])")
        _require(isinstance(cell.get("target"), str) and bool(_TARGET.match(cell["target"])),
                 f"{where}: 'target' must look like 'package.module:Attr'")
        _require(cell.get("strategy") in STRATEGY_NAMES,
                 f"{where}: 'strategy' must be one of {', '.join(STRATEGY_NAMES)}")
        _require(_int(cell.get("seed"), -(2**63), 2**63 - 1), f"{where}: 'seed' must be an integer")
        _require(_int(cell.get("schedules"), 1, 1_000_000), f"{where}: 'schedules' must be an integer in 1..1000000")
        _require(cell.get("expect") in ("race", "clean"), f"{where}: 'expect' must be 'race' or 'clean'")
        rel = cell.get("relative_throughput")
        _require(rel is None or (_number(rel) and rel > 0), f"{where}: 'relative_throughput' must be > 0 or null")
        shrink = cell.get("shrink_budget")
        _require(shrink is None or _int(shrink, 0, 100000), f"{where}: 'shrink_budget' must be an integer >= 0")
        expected = cell.get("expect_failures")
        _require(expected is None or (isinstance(expected, list) and expected
                                      and all(isinstance(e, str) and 0 < len(e) <= 1000 for e in expected)),
                 f"{where}: 'expect_failures' must be a non-empty list of message prefixes")
        _require(expected is None or cell["expect"] == "race",
                 f"{where}: 'expect_failures' needs 'expect': 'race'")
        wanted = cell.get("max_failures", max(1, len(expected or ())))
        _require(_int(wanted, 1, 1000), f"{where}: 'max_failures' must be an integer in 1..1000")
        _require(expected is None or wanted >= len(expected),
                 f"{where}: 'max_failures' must be at least the number of 'expect_failures'")
        proof = cell.get("expect_exhausted", False)
        _require(type(proof) is bool, f"{where}: 'expect_exhausted' must be true or false")
        _require(not proof or cell["expect"] == "clean", f"{where}: 'expect_exhausted' needs 'expect': 'clean'")
        _require(not proof or is_systematic(cell["strategy"]),
                 f"{where}: 'expect_exhausted' needs a strategy that exhausts its space "
                 f"({', '.join(n for n in STRATEGY_NAMES if is_systematic(n))})")
        memory = cell.get("memory", True)
        _require(type(memory) is bool, f"{where}: 'memory' must be true or false")
        expectation = Expectation(
            cell["scenario"], cell["target"], cell["semantics"], cell["strategy"], cell["seed"], cell["schedules"],
            cell["expect"], None if rel is None else float(rel), shrink, wanted,
            None if expected is None else tuple(expected), proof, memory,
        )
        _require(expectation.key not in seen, f"{where}: duplicate scenario x target x semantics")
        seen.add(expectation.key)
        out.append(expectation)
    return Baseline(float(tolerance), ref_schedules, tuple(out), data)


def read(path: str) -> Baseline:
    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_BASELINE_BYTES + 1)
    except OSError as exc:
        raise BaselineError(f"cannot read baseline {path!r}: {exc.strerror or exc}") from None
    return parse(raw, source=path)


@dataclass
class Verdict:
    expectation: Expectation
    cell: CellResult
    relative: float | None  # measured ratio against the reference
    problems: list[str]

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def text(self) -> str:
        return "ok" if self.ok else "; ".join(self.problems)


def judge(baseline: Baseline, cells: list[CellResult], reference_rate: float) -> list[Verdict]:
    verdicts = []
    for expectation, cell in zip(baseline.cells, cells, strict=True):
        problems = []
        relative = cell.executions_per_second / reference_rate if reference_rate > 0 else None
        if expectation.expect == "race" and cell.failure is None:
            problems.append(
                f"known-buggy target no longer caught: {count(cell.schedules, 'schedule')} clean "
                "(the harness lost power)"
            )
        elif expectation.expect == "race" and not cell.races and cell.verdict == "hang":
            problems.append(f"known-buggy target no longer races: it hangs ({cell.failures[0].message})")
        elif expectation.expect == "race" and not cell.races:
            problems.append(f"known-buggy target no longer races: {cell.failure.message} fails under every schedule "
                            "tried (not a race)")
        if expectation.expect == "clean":
            problems.extend(f"fixed target now fails: {f.message}; replay: racecheck replay {f.token}"
                            for f in cell.failures)
        if expectation.expect_failures is not None and cell.failures:
            problems.extend(compare_failures(expectation.expect_failures, cell))
        if expectation.expect_exhausted and not cell.failures and not cell.exhausted:
            problems.append(f"proof no longer complete: {count(cell.schedules, 'schedule')} ran out before the space "
                            f"did ({count(cell.interleavings, 'class')} of interleavings seen); the code gained "
                            "scheduling points or the search lost its reduction")
        if expectation.relative_throughput is not None and relative is not None:
            floor = expectation.relative_throughput * (1 - baseline.tolerance)
            if relative < floor:
                problems.append(
                    f"throughput dropped: {relative:.3f} x reference, baseline {expectation.relative_throughput:.3f}"
                    f" (tolerance {baseline.tolerance:.0%}, floor {floor:.3f})"
                )
        verdicts.append(Verdict(expectation, cell, relative, problems))
    return verdicts


def compare_failures(expected: tuple[str, ...], cell: CellResult) -> list[str]:
    """The differences between the distinct failures a baseline expects (message prefixes) and those found."""
    problems = []
    found = [f.message for f in cell.failures]
    for prefix in expected:
        if not any(message.startswith(prefix) for message in found):
            problems.append(f"expected distinct failure no longer found: {prefix!r} (found: "
                            f"{'; '.join(found)})")
    for f in cell.failures:
        if not any(f.message.startswith(prefix) for prefix in expected):
            problems.append(f"new distinct failure: {f.message}; replay: racecheck replay {f.token}")
    return problems


def updated(baseline: Baseline, verdicts: list[Verdict]) -> str:
    """The baseline document with each cell's relative throughput replaced by this run's measurement."""
    data = json.loads(json.dumps(baseline.raw))
    for cell, verdict in zip(data["cells"], verdicts, strict=True):
        if verdict.relative is not None:
            cell["relative_throughput"] = float(f"{verdict.relative:.4g}")  # 4 significant digits, however small
    return json.dumps(data, indent=2) + "\n"
