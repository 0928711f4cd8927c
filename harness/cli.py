"""The ``racecheck`` command: run a scenario against a checkpoint IO, replay a token, or run the demo.

Bad input (unknown scenario, malformed token, unimportable target) is one line on stderr and exit status 2;
a found race is exit status 1 with the token and the trace; a clean exploration is exit status 0.
"""

from __future__ import annotations

import sys

import click
from racecheck.errors import TokenError
from racecheck.explore import Result, explore, replay
from racecheck.strategies import STRATEGIES
from racecheck.tokens import decode

__racecheck_engine__ = True


def _scenarios():
    try:
        from racecheck import scenarios
    except ImportError as exc:  # pragma: no cover - the scenarios need the lightning extra
        raise click.ClickException(f"scenarios need the lightning extra (pip install 'racecheck[lightning]'): {exc}")
    return scenarios


def _bad_input(message: str) -> None:
    click.echo(f"racecheck: error: {message}", err=True)
    sys.exit(2)


def _resolve(scenario_name: str, target_spec: str):
    scenarios = _scenarios()
    try:
        scenario = scenarios.get(scenario_name)
        target = scenarios.load_target(target_spec)
    except scenarios.ScenarioError as exc:
        _bad_input(str(exc))
    return scenario, target, scenarios.instrumented_modules(target)


def _report(result: Result, label: str) -> None:
    if result.failure is None:
        click.echo(f"{label}: {result.summary()}")
        return
    click.echo(f"{label}: race found after {result.schedules} schedule(s)")
    click.echo(str(result.failure))


@click.group()
def main() -> None:
    """racecheck: deterministic, replayable thread-race testing for checkpointing code."""


@main.command("list")
def list_scenarios() -> None:
    """List the scenario catalogue."""
    for name, scenario in sorted(_scenarios().CATALOGUE.items()):
        click.echo(f"{name:24} {scenario.summary}")


@main.command()
@click.argument("scenario")
@click.option("--target", default=None, help="checkpoint IO as module:Class (default: stock AsyncCheckpointIO)")
@click.option("--strategy", type=click.Choice(STRATEGIES), default="pct", show_default=True)
@click.option("--schedules", type=click.IntRange(min=1), default=1000, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
def run(scenario: str, target: str | None, strategy: str, schedules: int, seed: int) -> None:
    """Explore SCENARIO against a target; exit 1 with a token if a race is found."""
    target = target or _scenarios().STOCK_TARGET
    spec, cls, modules = _resolve(scenario, target)
    fn = spec.test_function(cls)
    result = explore(fn, strategy=strategy, schedules=schedules, seed=seed, instrument=modules, fs=spec.fs)
    _report(result, f"{scenario} on {target}")
    sys.exit(0 if result.ok else 1)


@main.command("replay")
@click.argument("scenario")
@click.argument("token")
@click.option("--target", default=None, help="checkpoint IO as module:Class (default: stock AsyncCheckpointIO)")
def replay_cmd(scenario: str, token: str, target: str | None) -> None:
    """Replay TOKEN for SCENARIO and print its trace."""
    try:
        decode(token)  # a malformed token is reported before anything is imported or run
    except TokenError as exc:
        _bad_input(str(exc))
    target = target or _scenarios().STOCK_TARGET
    spec, cls, modules = _resolve(scenario, target)
    try:
        result = replay(spec.test_function(cls), token, instrument=modules, fs=spec.fs)
    except TokenError as exc:
        _bad_input(str(exc))
    if result.failure is not None:
        click.echo(str(result.failure))
        sys.exit(1)
    click.echo(result.trace)  # type: ignore[attr-defined]
    click.echo("schedule replayed: no failure")


@main.command()
@click.option("--schedules", type=click.IntRange(min=1), default=1000, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
def demo(schedules: int, seed: int) -> None:
    """Reproduce the upstream race on stock AsyncCheckpointIO, replay it, then verify the fixed IO."""
    scenarios = _scenarios()
    scenario = scenarios.get("delete-while-queued")
    stock = scenarios.load_target(scenarios.STOCK_TARGET)
    fixed = scenarios.load_target(scenarios.FIXED_TARGET)
    stock_fn = scenario.test_function(stock)
    found = explore(
        stock_fn, strategy="pct", schedules=schedules, seed=seed, instrument=scenarios.instrumented_modules(stock)
    )
    _report(found, f"stock {scenarios.STOCK_TARGET}")
    if found.failure is None:
        click.echo("demo: expected the stock plugin to race, but no schedule failed", err=True)
        sys.exit(1)
    again = replay(stock_fn, found.failure.token, instrument=scenarios.instrumented_modules(stock))
    same = again.failure is not None and again.failure.trace == found.failure.trace
    click.echo(f"replay of the token: {'identical trace' if same else 'DIFFERENT trace'}")
    verified = {}
    windows = scenarios.get("delete-while-queued-windows")
    for spec, strategy in ((scenario, "pct"), (scenario, "random"), (windows, "pct"), (windows, "random")):
        fn = spec.test_function(fixed)
        label = f"{spec.name} {strategy}"
        verified[label] = explore(
            fn, strategy=strategy, schedules=schedules, seed=seed, instrument=scenarios.instrumented_modules(fixed),
            fs=spec.fs,
        )
        _report(verified[label], f"fixed {scenarios.FIXED_TARGET} [{label}]")
    ok = same and all(r.ok for r in verified.values())
    click.echo("demo: OK (race reproduced on stock, fixed IO verified)" if ok else "demo: FAILED")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":  # pragma: no cover
    main()
