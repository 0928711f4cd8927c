"""The ``racecheck`` command: list the scenario catalogue, explore it, replay a token, gate a PR, run the demo.

Exit status, for every command: 0 nothing found, 1 a race found (or a gate regression, or a replay that diverged),
2 usage or input error (unknown scenario, malformed token, unimportable target, bad baseline file, bad option),
always as exactly one line on stderr and never a traceback. Explorations are delegated to
:mod:`racecheck.frontends.parallel` (so ``--jobs`` and ``--tx`` give the same answer as one process) and reports to
:mod:`racecheck.report`. Scenarios come from :mod:`racecheck.scenarios`, or from the module named by the
``RACECHECK_CATALOGUE`` environment variable (a plug-in catalogue with the same API).
"""

from __future__ import annotations

import importlib
import math
import os
import shlex
import sys
import time
from collections.abc import Sequence
from typing import Any, NoReturn

import click
from racecheck.errors import ReplayDivergence, TokenError
from racecheck.frontends import parallel
from racecheck.frontends.clitoken import decode as decode_cli_token
from racecheck.report.model import CellResult, FailureRecord
from racecheck.search.registry import STRATEGY_NAMES as STRATEGIES

__racecheck_engine__ = True

FS_CHOICES = ("posix", "windows", "both", "real")


class InputError(Exception):
    """Bad input detected by the CLI itself; becomes one line on stderr and exit status 2."""


def _one_line(text: str) -> str:
    return " ".join(part.strip() for part in str(text).splitlines() if part.strip()) or "error"


def _fail_input(message: str) -> NoReturn:
    click.echo(f"racecheck: error: {_one_line(message)}", err=True)
    sys.exit(2)


class _Cli(click.Group):
    """A click group whose usage errors, like every other input error, are one line and exit status 2."""

    def main(self, *args: Any, **kwargs: Any) -> Any:
        kwargs["standalone_mode"] = False
        try:
            code = super().main(*args, **kwargs)
        except click.exceptions.NoArgsIsHelpError:
            commands = ", ".join(self.list_commands(click.Context(self)))
            _fail_input(f"missing command ({commands}; see racecheck --help)")
        except click.UsageError as exc:
            where = exc.ctx.command_path if exc.ctx is not None else "racecheck"
            _fail_input(f"{exc.format_message()} (see {where} --help)")
        except click.ClickException as exc:
            _fail_input(exc.format_message())
        except click.exceptions.Abort:
            click.echo("racecheck: aborted", err=True)
            sys.exit(130)
        except InputError as exc:
            _fail_input(str(exc))
        except parallel.RunnerError as exc:
            _fail_input(str(exc))
        except (KeyboardInterrupt, SystemExit):
            raise
        except Exception as exc:  # noqa: BLE001 - never a traceback at the user; RACECHECK_DEBUG=1 shows it
            if os.environ.get("RACECHECK_DEBUG"):
                raise
            _fail_input(f"internal error: {type(exc).__name__}: {exc} (RACECHECK_DEBUG=1 shows the traceback)")
        sys.exit(code if isinstance(code, int) else 0)


# ----- resolving what to explore -------------------------------------------------------------------------------------


def _catalogue(name: str | None = None) -> Any:
    name = name if name is not None else parallel.catalogue_name()
    try:
        return parallel.load_catalogue(name)
    except Exception as exc:  # noqa: BLE001 - a missing extra or a broken plug-in catalogue
        where = name or parallel.DEFAULT_CATALOGUE
        raise InputError(f"cannot load the scenario catalogue {where!r}: {type(exc).__name__}: {exc}")


def _scenario(catalogue: Any, name: str) -> Any:
    try:
        return catalogue.get(name)
    except catalogue.ScenarioError as exc:
        raise InputError(str(exc))


def _target(catalogue: Any, spec: str) -> Any:
    try:
        return catalogue.load_target(spec)
    except catalogue.ScenarioError as exc:
        raise InputError(str(exc))
    except Exception as exc:  # noqa: BLE001 - whatever importing user code raised
        raise InputError(f"cannot load target {spec!r}: {type(exc).__name__}: {exc}")


def _check_instrument(modules: Sequence[str]) -> None:
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception as exc:  # noqa: BLE001
            raise InputError(f"--instrument {name!r}: cannot import it: {type(exc).__name__}: {exc}")


def _semantics(scenario: Any, fs: str) -> tuple[str, ...]:
    if fs == "both":
        return tuple(getattr(scenario, "default_semantics", None) or scenario.semantics)
    return (fs,) if fs in scenario.semantics else ()


def _prebuild(catalogue_name: str | None, cell: parallel.Cell) -> None:
    """Build each cell here first, so a target the scenario cannot use is a one-line error before any work starts."""
    catalogue = _catalogue(catalogue_name)
    try:
        parallel.prepare(catalogue_name, cell.scenario, cell.target, cell.fs, cell.instrument)
    except catalogue.ScenarioError as exc:
        raise InputError(str(exc))


def _prepare_report_dir(directory: str | None) -> None:
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


def failure_block(cell: CellResult) -> str:
    """What a person needs about one failure: message, where, the replay command, the trace. `run` and `replay`
    print the same block for the same schedule."""
    f = cell.failure
    assert f is not None
    where = f" in {f.thread}" if f.thread else ""
    return (
        f"  {f.message}\n"
        f"  {f.kind}{where}, schedule #{f.schedule_index}, {f.preemptions} preemption(s), {f.steps} steps\n"
        f"  replay with: racecheck replay {f.token}\n"
        f"{f.trace}"
    ) + (f"\n  {f.race_text}" if f.race_text else "")


def _coverage(cell: CellResult) -> str:
    return f"{cell.schedules} schedules, {cell.interleavings} interleavings"


def _cell_line(cell: CellResult) -> str:
    how = f"({cell.strategy}, seed {cell.seed})"
    if cell.failure is not None:
        return f"{cell.label}: RACE FOUND at schedule #{cell.failure.schedule_index} {how} after {_coverage(cell)}"
    note = f", {cell.exhausted_note}" if cell.exhausted else ""
    if cell.budget_stopped:
        note = f" (time budget: {cell.schedules} of {cell.requested})"
    rate = cell.schedules_per_second
    return f"{cell.label}: clean, {_coverage(cell)} {how}{note}, {rate:.{1 if rate < 10 else 0}f} schedules/s"


class Progress:
    """Live coverage while ``racecheck run`` explores: schedules, distinct interleavings and races so far, as a
    rich progress bar on an interactive stderr (silent otherwise, and with ``--quiet``).

    The counts come from the engine's ``progress=`` snapshots (every schedule, when units run in this process)
    and from each finished unit (the authority, and the only source when units run in other processes).
    Interleavings are counted per cell as the union of the keys its chunks saw."""

    REFRESH_S = 0.1  # redraw at most this often (display only: nothing explored depends on it)

    def __init__(self, requested: Sequence[int], enabled: bool, console: Any = None) -> None:
        self.bar = None
        self.requested = list(requested)  # schedules asked for, per cell
        self.total = sum(self.requested)
        self.failed_cells: set[int] = set()
        self.live: dict[tuple[int, int], int] = {}  # (cell, chunk) -> schedules run so far
        self.keys: dict[int, set[str]] = {}  # cell -> interleaving keys seen
        self.exhausted_at: dict[int, int] = {}  # cell -> the chunk that ran its whole space
        self.started = time.monotonic()
        self.drawn = 0.0
        if not enabled:
            return
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
        from rich.progress import Progress as Bar

        console = console or Console(stderr=True)
        if not console.is_terminal:
            return
        self.bar = Bar(
            TextColumn("exploring"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("schedules, {task.fields[interleavings]} interleavings, {task.fields[rate]:.0f}/s, "
                       "{task.fields[failures]} race(s)"),
            TimeElapsedColumn(),
            console=console,
            auto_refresh=False,  # redrawn from the exploring thread: no extra thread beside controlled runs
            transient=True,
        )
        self.task = self.bar.add_task("explore", total=self.total, rate=0.0, failures=0, interleavings=0)
        self.bar.start()

    @property
    def done(self) -> int:
        return sum(self.live.values())

    @property
    def interleavings(self) -> int:
        return sum(len(keys) for keys in self.keys.values())

    @property
    def failures(self) -> int:
        return len(self.failed_cells)

    def schedule(self, unit: dict, snapshot: Any) -> None:
        """After every schedule of a unit run in this process (an engine ``Progress`` snapshot)."""
        if self._beyond(unit):
            return
        self.live[(unit["cell"], unit["chunk"])] = snapshot.schedules
        self.keys.setdefault(unit["cell"], set()).add(snapshot.interleaving)
        if snapshot.failed:
            self.failed_cells.add(unit["cell"])
        self._draw(force=False)

    def update(self, unit: dict, result: dict) -> None:
        """After a whole unit, wherever it ran."""
        if self._beyond(unit):
            return
        self.live[(unit["cell"], unit["chunk"])] = result["schedules"]
        self.keys.setdefault(unit["cell"], set()).update(result.get("interleaving_keys", ()))
        if result["failure"] is not None:
            self.failed_cells.add(unit["cell"])  # a race per cell, however many of its chunks failed
        if result.get("exhausted"):  # the cell's space is done: what it did not need leaves the total
            cell, chunk = unit["cell"], unit["chunk"]
            self.exhausted_at[cell] = chunk
            for key in [k for k in self.live if k[0] == cell and k[1] > chunk]:
                del self.live[key]  # ran beside it in another process: not part of the answer
            ran = sum(n for (c, _), n in self.live.items() if c == cell)
            self.total -= self.requested[cell] - ran
            self.requested[cell] = ran
        self._draw(force=True)

    def _beyond(self, unit: dict) -> bool:
        """A chunk after the one that exhausted its cell (run concurrently elsewhere): adds nothing."""
        return unit["chunk"] > self.exhausted_at.get(unit["cell"], unit["chunk"])

    def _draw(self, force: bool) -> None:
        if self.bar is None:
            return
        now = time.monotonic()
        if not force and now - self.drawn < self.REFRESH_S:
            return
        self.drawn = now
        rate = self.done / max(now - self.started, 1e-9)
        self.bar.update(self.task, total=self.total, completed=self.done, rate=rate, failures=self.failures,
                        interleavings=self.interleavings)
        self.bar.refresh()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


def _explore(cells: list[parallel.Cell], jobs: int, tx: Sequence[str], budget: float | None, quiet: bool):
    progress = Progress([c.schedules for c in cells], enabled=not quiet)
    try:
        return parallel.explore_cells(cells, jobs=jobs, tx=tx, time_budget=budget, progress=progress.update,
                                      on_schedule=progress.schedule)
    finally:
        progress.close()


def _write_reports(directory: str | None, cells: list[CellResult], run: dict, verdicts=None, title="") -> None:
    if directory is None:
        return
    from racecheck.report import write_reports

    command = "racecheck " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    paths = write_reports(directory, cells, command, run, verdicts, title or "racecheck report")
    click.echo(f"report: {', '.join(paths)}")


# ----- commands ----------------------------------------------------------------------------------------------------


@click.group(cls=_Cli)
@click.version_option(package_name="racecheck", message="racecheck %(version)s")
def main() -> None:
    """racecheck: deterministic, replayable thread-race testing for checkpointing code."""


@main.command("list")
def list_scenarios() -> None:
    """List the scenario catalogue with each scenario's oracle."""
    catalogue = _catalogue()
    items = list(catalogue.CATALOGUE.items())
    width = max((len(name) for name, _ in items), default=0)
    for name, scenario in items:
        semantics = ",".join(scenario.semantics)
        click.echo(f"{name:{width}}  [{semantics}]  {_one_line(scenario.oracle)}")


def _positive_budget(ctx: Any, param: Any, value: float | None) -> float | None:
    if value is not None and not (math.isfinite(value) and value > 0):
        raise click.BadParameter("must be a positive number of seconds")
    return value


@main.command()
@click.argument("scenarios", nargs=-1)
@click.option("--target", default=None, metavar="MOD:ATTR", help="checkpoint IO to test (default: stock Lightning)")
@click.option("--strategy", type=click.Choice(STRATEGIES), default="pct", show_default=True)
@click.option("--schedules", type=click.IntRange(1, 10_000_000), default=1000, show_default=True)
@click.option("--seed", type=click.IntRange(-(2**62), 2**62), default=0, show_default=True)
@click.option("--fs", "fs", type=click.Choice(FS_CHOICES), default="both", show_default=True,
              help="file-system semantics; both = each scenario's default set")
@click.option("--jobs", "-j", type=click.IntRange(1, 256), default=1, show_default=True, help="local processes")
@click.option("--tx", multiple=True, metavar="SPEC", help="execnet gateway: popen, 2*popen, ssh=host//python=python3")
@click.option("--report", "report_dir", default=None, metavar="DIR", help="write results.json, junit.xml, index.html")
@click.option("--time-budget", type=float, default=None, callback=_positive_budget, metavar="SECONDS",
              help="stop starting new work after this long (checked between chunks of schedules)")
@click.option("--instrument", multiple=True, metavar="MOD", help="also control this module's threads/locks")
@click.option("--quiet", "-q", is_flag=True, help="one line per cell, no trace, no progress bar")
def run(scenarios: tuple[str, ...], target: str | None, strategy: str, schedules: int, seed: int, fs: str,
        jobs: int, tx: tuple[str, ...], report_dir: str | None, time_budget: float | None,
        instrument: tuple[str, ...], quiet: bool) -> None:
    """Explore SCENARIOS (all when none is named); exit 1 with a replay token when a race is found."""
    catalogue_name = parallel.catalogue_name()
    catalogue = _catalogue(catalogue_name)
    names = list(scenarios) or list(catalogue.CATALOGUE)
    chosen = [_scenario(catalogue, name) for name in names]
    target = target or catalogue.STOCK_TARGET
    _target(catalogue, target)
    _check_instrument(instrument)
    parallel.expand_tx(tx)
    _prepare_report_dir(report_dir)
    cells = []
    for scenario in chosen:
        semantics = _semantics(scenario, fs)
        if not semantics:
            if scenarios:
                raise InputError(
                    f"scenario {scenario.name!r} does not run under --fs {fs} (it supports: "
                    f"{', '.join(scenario.semantics)})"
                )
            if not quiet:
                click.echo(f"{scenario.name}: skipped, it does not run under --fs {fs}")
            continue
        for semantic in semantics:
            cells.append(parallel.Cell(
                scenario.name, target, semantic, strategy, seed, schedules, tuple(instrument), catalogue_name,
                oracle=_one_line(scenario.oracle),
            ))
    for cell in cells:
        _prebuild(catalogue_name, cell)
    started = time.perf_counter()
    results, budget_hit = _explore(cells, jobs, tx, time_budget, quiet)
    explore_wall = time.perf_counter() - started
    for cell in results:
        click.echo(_cell_line(cell))
        if cell.failure is not None:
            click.echo(f"  replay with: racecheck replay {cell.failure.token}" if quiet else failure_block(cell))
    explored, requested = sum(c.schedules for c in results), sum(c.requested for c in results)
    if budget_hit:
        click.echo(f"time budget of {time_budget:g}s reached: explored {explored} of {requested} schedules "
                   "(always the same leading schedules of this exploration)")
    races = sum(1 for c in results if c.failure is not None)
    interleavings = sum(c.interleavings for c in results)
    exhausted = sum(1 for c in results if c.exhausted)
    done = f", {exhausted} exhausted" if exhausted else ""
    click.echo(f"{len(results)} cell(s), {explored} schedules, {interleavings} interleavings, {races} race(s) found"
               f"{done}")
    run_info = {"jobs": jobs, "tx": list(tx), "time_budget_s": time_budget, "budget_reached": budget_hit,
                "chunk": parallel.CHUNK, "explore_wall_s": round(explore_wall, 3)}
    _write_reports(report_dir, results, run_info)
    sys.exit(1 if races else 0)


def replay_cli_token(token: str) -> tuple[str, CellResult | None, str]:
    """Replay a CLI token: (label, the failure as a cell or None, the trace). Raises InputError for a bad token,
    target or catalogue, and ReplayDivergence when the code under test left the recorded schedule."""
    from racecheck.search.explore import replay

    try:
        parsed = decode_cli_token(token)  # a malformed token is refused before anything is imported or run
    except TokenError as exc:
        raise InputError(str(exc))
    catalogue = _catalogue(parsed.catalogue)
    _scenario(catalogue, parsed.scenario)
    _target(catalogue, parsed.target)
    _check_instrument(parsed.instrument)
    try:
        prepared, kwargs = parallel.prepare(
            parsed.catalogue, parsed.scenario, parsed.target, parsed.fs, parsed.instrument
        )
    except catalogue.ScenarioError as exc:
        raise InputError(str(exc))
    try:
        result = replay(prepared.fn, parsed.engine_token, **kwargs)
    except ReplayDivergence:
        raise
    except TokenError as exc:
        raise InputError(str(exc))
    label = f"{parsed.scenario} [{parsed.fs}] on {parsed.target}"
    failure = result.failure
    if failure is None:
        return label, None, str(getattr(result, "trace", ""))
    record = FailureRecord(
        kind=str(failure.kind),
        message=f"{type(failure.exception).__name__}: {failure.exception}",
        schedule_index=parsed.index,
        preemptions=int(failure.preemptions),
        steps=int(failure.steps),
        trace=str(failure.trace),
        engine_token=parsed.engine_token,
        token=token.strip(),
        thread=getattr(failure, "thread", None),
    )
    cell = CellResult(parsed.scenario, parsed.target, parsed.fs, "replay", parsed.index, 1, 1, failure=record)
    return label, cell, record.trace


@main.command("replay")
@click.argument("token")
def replay_cmd(token: str) -> None:
    """Re-run the one schedule TOKEN describes (scenario, target, semantics, choices) and print its trace."""
    try:
        label, cell, trace = replay_cli_token(token)
    except ReplayDivergence as exc:  # a failure of the code under test (nondeterminism), not bad input
        click.echo(f"racecheck: {_one_line(str(exc))}", err=True)
        sys.exit(1)
    if cell is None:
        click.echo(f"{label}: schedule replayed, no failure")
        click.echo(trace)
        sys.exit(0)
    click.echo(f"{label}: RACE REPRODUCED at schedule #{cell.failure.schedule_index}")
    click.echo(failure_block(cell))
    sys.exit(1)


def _sig4(value: float | None) -> float | None:
    return None if value is None else float(f"{value:.4g}")


@main.command()
@click.option("--baseline", required=True, metavar="FILE", help="the committed baseline, e.g. reports/baseline.json")
@click.option("--report", "report_dir", default=None, metavar="DIR", help="write results.json, junit.xml, index.html")
@click.option("--jobs", "-j", type=click.IntRange(1, 256), default=1, show_default=True)
@click.option("--update", is_flag=True, help="rewrite the baseline's relative throughputs with this run's figures")
def gate(baseline: str, report_dir: str | None, jobs: int, update: bool) -> None:
    """The PR gate: fail when a fixed target fails, a known-buggy one is no longer caught, or throughput drops."""
    from racecheck.report import gate as gating
    from racecheck.report.atomic import write_atomic

    try:
        expected = gating.read(baseline)
    except gating.BaselineError as exc:
        raise InputError(str(exc))
    catalogue_name = parallel.catalogue_name()
    catalogue = _catalogue(catalogue_name)
    cells = []
    for exp in expected.cells:
        try:
            scenario = _scenario(catalogue, exp.scenario)
            _target(catalogue, exp.target)
            if exp.fs not in scenario.semantics:
                raise InputError(f"scenario {exp.scenario!r} does not run under {exp.fs!r}")
        except InputError as exc:
            raise InputError(f"{baseline}: {exc}")
        options = () if exp.shrink_budget is None else (("shrink_budget", exp.shrink_budget),)
        cells.append(parallel.Cell(exp.scenario, exp.target, exp.fs, exp.strategy, exp.seed, exp.schedules, (),
                                   catalogue_name, options, oracle=_one_line(scenario.oracle)))
    _prepare_report_dir(report_dir)
    for cell in cells:
        _prebuild(catalogue_name, cell)
    before = gating.measure_reference(expected.reference_schedules)
    results, _ = _explore(cells, jobs, (), None, quiet=False)
    after = gating.measure_reference(expected.reference_schedules)  # before and after: load drifts average out
    reference_rate = (before + after) / 2
    verdicts = gating.judge(expected, results, reference_rate)
    click.echo(f"reference workload: {reference_rate:.0f} schedules/s (before {before:.0f}, after {after:.0f}; "
               f"tolerance {expected.tolerance:.0%})")
    for verdict in verdicts:
        cell = verdict.cell
        ratio = "-" if verdict.relative is None else f"{verdict.relative:.3f}"
        base = verdict.expectation.relative_throughput
        base_text = "-" if base is None else f"{base:.3f}"
        found = "race" if cell.failure is not None else "clean"
        done = f" ({cell.exhausted_note})" if cell.exhausted else ""
        click.echo(f"{'ok  ' if verdict.ok else 'FAIL'} {cell.label}: expected {verdict.expectation.expect}, "
                   f"got {found} in {cell.schedules} schedules, {cell.interleavings} interleavings{done}; "
                   f"throughput {ratio} x reference (baseline {base_text})")
        for problem in verdict.problems:
            click.echo(f"     {problem}")
    failed = [v for v in verdicts if not v.ok]
    run_info = {"gate": {"baseline": baseline, "tolerance": expected.tolerance,
                         "reference_schedules_per_s": round(reference_rate, 2),
                         "verdicts": [{"scenario": v.cell.scenario, "target": v.cell.target,
                                       "semantics": v.cell.fs, "expect": v.expectation.expect,
                                       "relative_throughput": _sig4(v.relative),
                                       "baseline_relative_throughput": v.expectation.relative_throughput,
                                       "ok": v.ok, "problems": v.problems} for v in verdicts]},
                "jobs": jobs}
    _write_reports(report_dir, results, run_info, {v.cell.key: v.text for v in verdicts}, "racecheck gate")
    if update:
        if any(v.cell.failure is not None if v.expectation.expect == "clean" else v.cell.failure is None
               for v in verdicts):
            click.echo("gate: not updating the baseline while a verdict is wrong", err=True)
        else:
            write_atomic(baseline, gating.updated(expected, verdicts))
            click.echo(f"baseline updated: {baseline}")
    click.echo(f"gate: FAILED ({len(failed)} regression(s))" if failed else f"gate: OK ({len(verdicts)} cells)")
    sys.exit(1 if failed else 0)


@main.command()
@click.option("--schedules", type=click.IntRange(1, 1_000_000), default=200, show_default=True,
              help="schedules per fixed-IO verification")
@click.option("--seed", type=click.IntRange(-(2**62), 2**62), default=0, show_default=True)
def demo(schedules: int, seed: int) -> None:
    """Reproduce the upstream race on stock Lightning, replay its token, then verify the fixed IO."""
    from racecheck.frontends.cli import demo as demo_steps

    sys.exit(demo_steps.run_demo(schedules, seed, echo=click.echo))

