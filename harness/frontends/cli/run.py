"""``racecheck list`` and ``racecheck run``: show the scenario catalogue, and explore it cell by cell."""

from __future__ import annotations

import math
import sys
import time
from typing import Any

import click
from racecheck.frontends import parallel
from racecheck.frontends.cli import progress
from racecheck.frontends.cli.cells import (
    InputError,
    cell_line,
    check_instrument,
    failure_blocks,
    find_scenario,
    load_catalogue,
    load_target,
    one_line,
    prebuild,
    prepare_report_dir,
    scenario_semantics,
    scope_lines,
    write_reports,
)
from racecheck.report.words import count
from racecheck.search.data_races import MODES as DATA_RACE_MODES
from racecheck.search.registry import DEFAULT_STRATEGY
from racecheck.search.registry import STRATEGY_NAMES as STRATEGIES

__racecheck_engine__ = True

FS_CHOICES = ("posix", "windows", "both", "real")


@click.command("list")
def list_scenarios() -> None:
    """List the scenario catalogue: each scenario's semantics, how its oracle reads checkpoints, and its oracle."""
    found = load_catalogue()
    items = list(found.CATALOGUE.items())
    width = max((len(name) for name, _ in items), default=0)
    shown = {name: f"[{','.join(each.semantics)}]" for name, each in items}
    across = max((len(text) for text in shown.values()), default=0)
    for name, each in items:
        reader = getattr(each, "reader", "")  # a plug-in catalogue may not say
        said = f"reads: {reader:6}  " if reader else ""
        said += "takes: manager  " if getattr(each, "takes", "io") == "manager" else ""
        click.echo(f"{name:{width}}  {shown[name]:{across}}  {said}{one_line(each.oracle)}")
    readers = getattr(found, "READERS", None) or {}
    for key, meaning in readers.items():
        click.echo(f"reads: {key}: {meaning}")


def _positive_budget(ctx: Any, param: Any, value: float | None) -> float | None:
    if value is not None and not (math.isfinite(value) and value > 0):
        raise click.BadParameter("must be a positive number of seconds")
    return value


def exploration_options(command: Any) -> Any:
    """Where and how long to explore, and what to write: the options ``run`` and ``explore`` share."""
    for decls, attrs in reversed((
        (("--jobs", "-j"), {"type": click.IntRange(1, 256), "default": 1, "show_default": True,
                            "help": "local processes"}),
        (("--tx",), {"multiple": True, "metavar": "SPEC",
                     "help": "execnet gateway: popen, 2*popen, ssh=host//python=python3"}),
        (("--report", "report_dir"), {"default": None, "metavar": "DIR",
                                      "help": "write results.json, junit.xml, index.html"}),
        (("--time-budget",), {"type": float, "default": None, "callback": _positive_budget, "metavar": "SECONDS",
                              "help": "stop starting new work after this long (checked between chunks of schedules)"}),
        (("--quiet", "-q"), {"is_flag": True, "help": "one line per cell, no trace, no progress bar"}),
    )):
        command = click.option(*decls, **attrs)(command)
    return command


@click.command()
@click.argument("scenarios", nargs=-1)
@click.option("--target", default=None, metavar="MOD:ATTR", help="checkpoint IO to test (default: stock Lightning)")
@click.option("--strategy", type=click.Choice(STRATEGIES), default=DEFAULT_STRATEGY, show_default=True)
@click.option("--schedules", type=click.IntRange(1, 10_000_000), default=1000, show_default=True)
@click.option("--seed", type=click.IntRange(-(2**62), 2**62), default=0, show_default=True)
@click.option("--fs", "fs", type=click.Choice(FS_CHOICES), default="both", show_default=True,
              help="file-system semantics; both = each scenario's default set")
@exploration_options
@click.option("--instrument", multiple=True, metavar="MOD", help="also control this module's threads/locks")
@click.option("--max-failures", type=click.IntRange(1, 1000), default=1, show_default=True, metavar="N",
              help="keep exploring a cell until N distinct failures are found, and report each")
@click.option("--no-memory", "no_memory", is_flag=True,
              help="plain memory accesses are no scheduling points (memory=False): synchronisation and files only")
@click.option("--data-races", "data_races", type=click.Choice(DATA_RACE_MODES), default="report", show_default=True,
              help="unordered conflicting accesses: report them, fail the schedule where one shows, or ignore them")
def run(scenarios: tuple[str, ...], target: str | None, strategy: str, schedules: int, seed: int, fs: str,
        jobs: int, tx: tuple[str, ...], report_dir: str | None, time_budget: float | None,
        instrument: tuple[str, ...], max_failures: int, no_memory: bool, data_races: str, quiet: bool) -> None:
    """Explore SCENARIOS (all when none is named); exit 1 with a replay token when a race is found."""
    catalogue_name = parallel.catalogue_name()
    found = load_catalogue(catalogue_name)
    target = target or found.STOCK_TARGET
    loaded = load_target(found, target)
    # with no scenario named: every scenario that runs this kind of target (a CheckpointIO or a manager)
    names = list(scenarios) or [name for name, each in found.CATALOGUE.items()
                                if getattr(each, "accepts", lambda _: True)(loaded)]
    chosen = [find_scenario(found, name) for name in names]
    check_instrument(instrument)
    parallel.expand_tx(tx)
    prepare_report_dir(report_dir)
    cells = []
    options = (("max_failures", max_failures),) if max_failures > 1 else ()
    if no_memory:
        options += (("memory", False),)
    if data_races != "report":
        options += (("data_races", data_races),)
    for each in chosen:
        supported = scenario_semantics(each, fs)
        if not supported:
            if scenarios:
                raise InputError(
                    f"scenario {each.name!r} does not run under --fs {fs} (it supports: "
                    f"{', '.join(each.semantics)})"
                )
            if not quiet:
                click.echo(f"{each.name}: skipped, it does not run under --fs {fs}")
            continue
        for semantic in supported:
            cells.append(parallel.Cell(
                each.name, target, semantic, strategy, seed, schedules, tuple(instrument), catalogue_name,
                options, oracle=one_line(each.oracle),
            ))
    explore_and_report(cells, catalogue_name, jobs=jobs, tx=tx, time_budget=time_budget, quiet=quiet,
                       report_dir=report_dir, max_failures=max_failures)


def explore_and_report(cells: list[parallel.Cell], catalogue_name: str | None, *, jobs: int, tx: tuple[str, ...],
                       time_budget: float | None, quiet: bool, report_dir: str | None, max_failures: int) -> None:
    """Explore the cells with the live progress, print each cell's verdict and failures, the totals and the
    reports, and exit 1 when a cell failed (0 otherwise): the whole of ``run`` and ``explore`` after their input."""
    for cell in cells:
        prebuild(catalogue_name, cell)
    started = time.perf_counter()
    results, budget_hit = progress.explore(cells, jobs, tx, time_budget, quiet)
    explore_wall = time.perf_counter() - started
    for cell in results:
        click.echo(cell_line(cell))
        for block in failure_blocks(cell, quiet):
            click.echo(block)
        if not quiet:
            for line in scope_lines(cell):
                click.echo(line)
    explored, requested = sum(c.schedules for c in results), sum(c.requested for c in results)
    if budget_hit:
        click.echo(f"time budget of {time_budget:g}s reached: explored {explored} of {requested} schedules "
                   "(always the same leading schedules of this exploration)")
    races = sum(1 for c in results if c.verdict == "race")
    not_races = sum(1 for c in results if c.verdict == "not-a-race")
    hangs = sum(1 for c in results if c.verdict == "hang")
    distinct = sum(len(c.failures) for c in results)
    interleavings = sum(c.interleavings for c in results)
    exhausted = sum(1 for c in results if c.exhausted)
    done = f", {exhausted} exhausted" if exhausted else ""
    if max_failures > 1:
        done = f" ({count(distinct, 'distinct failure')})" + done
    if not_races:
        done = f", {count(not_races, 'cell')} failing under every schedule tried (not a race)" + done
    if hangs:
        done = f", {count(hangs, 'cell')} hanging (an uncontrolled wait, not a race)" + done
    click.echo(f"{count(len(results), 'cell')}, {count(explored, 'schedule')}, {count(interleavings, 'interleaving')}, "
               f"{count(races, 'race')} found{done}")
    run_info = {"jobs": jobs, "tx": list(tx), "time_budget_s": time_budget, "budget_reached": budget_hit,
                "chunk": parallel.CHUNK, "explore_wall_s": round(explore_wall, 3)}
    write_reports(report_dir, results, run_info)
    sys.exit(1 if races or not_races or hangs else 0)
