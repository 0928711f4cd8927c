"""``racecheck explore MODULE:FUNCTION``: explore any zero-argument function, with every Config option as a flag.

The function is the one scenario of :mod:`racecheck.frontends.functions`, explored as one cell through ``run``'s own
path (:func:`racecheck.frontends.cli.run.explore_and_report`): the same live progress, verdict, failure block,
racing pair, reports, ``--jobs``/``--tx`` and exit status. Its tokens name the function, so ``racecheck replay
TOKEN`` finds it again in a fresh process started in the same directory.
"""

from __future__ import annotations

from typing import Any

import click
from racecheck.frontends import functions, parallel
from racecheck.frontends.cli import options as config_options
from racecheck.frontends.cli.cells import InputError, check_instrument, prepare_report_dir
from racecheck.frontends.cli.run import exploration_options, explore_and_report
from racecheck.search.registry import DEFAULT_STRATEGY

__racecheck_engine__ = True

CATALOGUE = functions.__name__


@click.command("explore")
@click.argument("function", metavar="MODULE:FUNCTION")
@exploration_options
@config_options.config_flags
def explore_cmd(function: str, jobs: int, tx: tuple[str, ...], report_dir: str | None, time_budget: float | None,
                quiet: bool, **flags: Any) -> None:
    """Explore FUNCTION, a zero-argument function (MODULE:FUNCTION, or path/test_file.py::test_name for a
    plain test), under many interleavings; exit 1 with a replay token when a schedule fails, 0 when none did.

    The working directory is on sys.path, as with python -m. Every racecheck.Config option is a flag; a flag
    left out keeps Config's default."""
    try:
        functions.load_target(function)
    except functions.ScenarioError as exc:
        raise InputError(str(exc))
    chosen = config_options.given(flags)
    fs = chosen.pop("fs", None) or "real"
    strategy = chosen.pop("strategy", DEFAULT_STRATEGY)
    schedules = chosen.pop("schedules", 1000)
    seed = chosen.pop("seed", 0)
    instrument = tuple(str(name) for name in chosen.pop("instrument", ()))
    check_instrument(instrument)
    parallel.expand_tx(tx)
    prepare_report_dir(report_dir)
    cell = parallel.Cell(functions.SCENARIO, function.strip(), fs, strategy, seed, schedules, instrument, CATALOGUE,
                         tuple(sorted(chosen.items())), oracle=functions.FunctionScenario.oracle)
    explore_and_report([cell], CATALOGUE, jobs=jobs, tx=tx, time_budget=time_budget, quiet=quiet,
                       report_dir=report_dir, max_failures=int(chosen.get("max_failures", 1)))
