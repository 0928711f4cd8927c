"""``racecheck replay TOKEN``: re-run the one schedule a CLI token describes, in this process, and print its trace.

:func:`replay_cli_token` is also what ``racecheck demo`` uses to check that a token replays the same trace.
"""

from __future__ import annotations

import sys

import click
from racecheck.errors import ReplayDivergence, TokenError
from racecheck.frontends import parallel
from racecheck.frontends.cli.cells import (
    NOT_A_RACE,
    InputError,
    check_instrument,
    failure_block,
    find_scenario,
    load_catalogue,
    load_target,
    one_line,
)
from racecheck.frontends.clitoken import decode as decode_cli_token
from racecheck.report.model import CellResult

__racecheck_engine__ = True


def replay_cli_token(token: str) -> tuple[str, CellResult | None, str]:
    """Replay a CLI token: (label, the failure as a cell or None, the trace). Raises InputError for a bad token,
    target or catalogue, and ReplayDivergence when the code under test left the recorded schedule."""
    from racecheck.api import replay

    try:
        parsed = decode_cli_token(token)  # a malformed token is refused before anything is imported or run
    except TokenError as exc:
        raise InputError(str(exc))
    catalogue = load_catalogue(parsed.catalogue)
    find_scenario(catalogue, parsed.scenario)
    load_target(catalogue, parsed.target)
    check_instrument(parsed.instrument)
    try:
        prepared, kwargs = parallel.prepare(
            parsed.catalogue, parsed.scenario, parsed.target, parsed.fs, parsed.instrument
        )
    except catalogue.ScenarioError as exc:
        raise InputError(str(exc))
    try:
        result = replay(prepared.fn, parsed.engine_token, judge=True, **{**kwargs, **dict(parsed.options)})
    except ReplayDivergence:
        raise
    except TokenError as exc:
        raise InputError(str(exc))
    label = f"{parsed.scenario} [{parsed.fs}] on {parsed.target}"
    failure = result.failure
    if failure is None:
        return label, None, str(getattr(result, "trace", ""))
    record = parallel.failure_record(failure)  # with its racing pair: printed as ``run`` prints it
    record.schedule_index = parsed.index
    record.token = token.strip()
    cell = CellResult(parsed.scenario, parsed.target, parsed.fs, "replay", parsed.index, 1, 1, failure=record)
    return label, cell, record.trace


@click.command("replay")
@click.argument("token")
def replay_cmd(token: str) -> None:
    """Re-run the one schedule TOKEN describes (scenario, target, semantics, choices) and print its trace."""
    try:
        label, cell, trace = replay_cli_token(token)
    except ReplayDivergence as exc:  # a failure of the code under test (nondeterminism), not bad input
        click.echo(f"racecheck: {one_line(str(exc))}", err=True)
        sys.exit(1)
    if cell is None:
        click.echo(f"{label}: schedule replayed, no failure")
        click.echo(trace)
        sys.exit(0)
    if cell.failure.not_a_race:
        click.echo(f"{label}: FAILURE REPRODUCED at schedule #{cell.failure.schedule_index} ({NOT_A_RACE})")
    else:
        click.echo(f"{label}: RACE REPRODUCED at schedule #{cell.failure.schedule_index}")
    click.echo(failure_block(cell))
    sys.exit(1)
