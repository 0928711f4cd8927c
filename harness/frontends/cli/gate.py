"""``racecheck gate --baseline FILE``: the PR gate's run. It explores the baseline's cells and measures the reference
workload (:mod:`racecheck.frontends.cli.reference`) before and after them, then hands the numbers to
:mod:`racecheck.report.gate`, which reads the baseline and judges; this module prints the verdicts, writes the reports
and, with ``--update``, the new baseline.
"""

from __future__ import annotations

import sys
import time

import click
from racecheck.frontends import parallel
from racecheck.frontends.cli import progress
from racecheck.frontends.cli.cells import (
    InputError,
    find_scenario,
    load_catalogue,
    load_target,
    one_line,
    prebuild,
    prepare_report_dir,
    write_reports,
)
from racecheck.report import gate as gating
from racecheck.report.words import count

__racecheck_engine__ = True


def measure_reference(schedules: int) -> float:
    """Executions per second of the reference workload in this process (wall clock: throughput only)."""
    from racecheck.api import explore
    from racecheck.frontends.cli import reference

    started = time.perf_counter()
    result = explore(reference.workload, strategy="random", schedules=schedules, seed=0)
    elapsed = time.perf_counter() - started
    if not result.ok:  # pragma: no cover - the reference has no bug; a failure here is an engine regression
        raise RuntimeError(f"the gate's reference workload failed: {result.failure.message}")
    return result.schedules / elapsed


def baseline_cells(baseline: str, expected: gating.Baseline) -> list[parallel.Cell]:
    """The cells the baseline lists, checked against the catalogue (a bad one is an InputError naming the file)."""
    catalogue_name = parallel.catalogue_name()
    catalogue = load_catalogue(catalogue_name)
    cells = []
    for exp in expected.cells:
        try:
            scenario = find_scenario(catalogue, exp.scenario)
            load_target(catalogue, exp.target)
            if exp.fs not in scenario.semantics:
                raise InputError(f"scenario {exp.scenario!r} does not run under {exp.fs!r}")
        except InputError as exc:
            raise InputError(f"{baseline}: {exc}")
        options = () if exp.shrink_budget is None else (("shrink_budget", exp.shrink_budget),)
        if exp.max_failures > 1:
            options += (("max_failures", exp.max_failures),)
        if not exp.memory:
            options += (("memory", False),)
        cells.append(parallel.Cell(exp.scenario, exp.target, exp.fs, exp.strategy, exp.seed, exp.schedules, (),
                                   catalogue_name, options, oracle=one_line(scenario.oracle)))
    return cells


def _sig4(value: float | None) -> float | None:
    return None if value is None else float(f"{value:.4g}")


def _echo_verdict(verdict: gating.Verdict) -> None:
    cell = verdict.cell
    ratio = "-" if verdict.relative is None else f"{verdict.relative:.3f}"
    base = verdict.expectation.relative_throughput
    base_text = "-" if base is None else f"{base:.3f}"
    found = cell.verdict if len(cell.failures) <= 1 else f"{cell.verdict} ({len(cell.failures)} distinct failures)"
    done = f" ({cell.exhausted_note})" if cell.exhausted else ""
    click.echo(f"{'ok  ' if verdict.ok else 'FAIL'} {cell.label}: expected {verdict.expectation.expect}, "
               f"got {found} in {count(cell.schedules, 'schedule')}, "
               f"{count(cell.interleavings, 'interleaving')}{done}; "
               f"throughput {ratio} x reference (baseline {base_text})")
    for problem in verdict.problems:
        click.echo(f"     {problem}")


@click.command()
@click.option("--baseline", required=True, metavar="FILE", help="the committed baseline, e.g. reports/baseline.json")
@click.option("--report", "report_dir", default=None, metavar="DIR", help="write results.json, junit.xml, index.html")
@click.option("--jobs", "-j", type=click.IntRange(1, 256), default=1, show_default=True)
@click.option("--update", is_flag=True, help="rewrite the baseline's relative throughputs with this run's figures")
def gate(baseline: str, report_dir: str | None, jobs: int, update: bool) -> None:
    """The PR gate: fail when a fixed target fails, a known-buggy one is no longer caught, or throughput drops."""
    from racecheck.report.atomic import write_atomic

    try:
        expected = gating.read(baseline)
    except gating.BaselineError as exc:
        raise InputError(str(exc))
    cells = baseline_cells(baseline, expected)
    prepare_report_dir(report_dir)
    for cell in cells:
        prebuild(cell.catalogue, cell)
    before = measure_reference(expected.reference_schedules)
    results, _ = progress.explore(cells, jobs, (), None, quiet=False)
    after = measure_reference(expected.reference_schedules)  # before and after: load drifts average out
    reference_rate = (before + after) / 2
    verdicts = gating.judge(expected, results, reference_rate)
    click.echo(f"reference workload: {reference_rate:.0f} schedules/s (before {before:.0f}, after {after:.0f}; "
               f"tolerance {expected.tolerance:.0%})")
    for verdict in verdicts:
        _echo_verdict(verdict)
    failed = [v for v in verdicts if not v.ok]
    run_info = {"gate": {"baseline": baseline, "tolerance": expected.tolerance,
                         "reference_schedules_per_s": round(reference_rate, 2),
                         "verdicts": [{"scenario": v.cell.scenario, "target": v.cell.target,
                                       "semantics": v.cell.fs, "expect": v.expectation.expect,
                                       "relative_throughput": _sig4(v.relative),
                                       "baseline_relative_throughput": v.expectation.relative_throughput,
                                       "ok": v.ok, "problems": v.problems} for v in verdicts]},
                "jobs": jobs}
    write_reports(report_dir, results, run_info, {v.cell.key: v.text for v in verdicts}, "racecheck gate")
    if update:
        if any(v.cell.failure is not None if v.expectation.expect == "clean" else v.cell.failure is None
               for v in verdicts):
            click.echo("gate: not updating the baseline while a verdict is wrong", err=True)
        else:
            write_atomic(baseline, gating.updated(expected, verdicts))
            click.echo(f"baseline updated: {baseline}")
    click.echo(f"gate: FAILED ({count(len(failed), 'regression')})" if failed else f"gate: OK ({len(verdicts)} cells)")
    sys.exit(1 if failed else 0)
