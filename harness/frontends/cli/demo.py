"""``racecheck demo``: the README's main job in one command.

1. Reproduce the upstream race on stock Lightning ``AsyncCheckpointIO``: ``delete-while-queued`` and ``trainer-fit``
   under POSIX semantics must each fail, with a token.
2. Replay each token the way ``racecheck replay`` does and check the trace is identical, byte for byte.
3. Reproduce the seed report's exact error: a model of Lightning 1.8's writer (``open(final, "wb")`` held open
   while it writes) under Windows semantics fails ``delete-while-writing`` with ``PermissionError [WinError 32]``.
4. Verify the fixed IO (``racecheck.fixed_impl:LockedAsyncCheckpointIO``): the same scenarios stay clean under POSIX
   and Windows semantics with pct and random, and ``delete-while-queued`` is proven by dpor: every class of
   equivalent interleavings explored, with no preemption bound.

Returns the exit status: 0 when every step held, 1 otherwise.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import click
from racecheck.frontends import parallel
from racecheck.frontends.cli.cells import InputError, cell_line, failure_block, load_catalogue
from racecheck.frontends.cli.replay import replay_cli_token

__racecheck_engine__ = True

STOCK_SCENARIOS = (("delete-while-queued", 200), ("trainer-fit", 20))
# every default (pct, memory watched); two distinct failures: the 1.8 writer also leaks, and pct meets that first
LEGACY_SCENARIO = ("delete-while-writing", "windows", "pct", 50, 2)
FIXED_SCENARIOS = (("delete-while-queued", 1.0), ("trainer-fit", 0.05))  # share of --schedules (trainer-fit is slow)
PROOF_SCENARIO = ("delete-while-queued", 100_000)  # dpor: a cap, never reached; exhaustion is the verdict


@click.command()
@click.option("--schedules", type=click.IntRange(1, 1_000_000), default=200, show_default=True,
              help="schedules per fixed-IO verification")
@click.option("--seed", type=click.IntRange(-(2**62), 2**62), default=0, show_default=True)
def demo(schedules: int, seed: int) -> None:
    """Reproduce the upstream race on stock Lightning, replay its token, then verify the fixed IO."""
    sys.exit(run_demo(schedules, seed, echo=click.echo))


def run_demo(schedules: int, seed: int, echo: Callable[[str], None]) -> int:
    """The four steps above, printed through ``echo``; the exit status (0 when every step held)."""
    catalogue_name = parallel.catalogue_name()
    catalogue = load_catalogue(catalogue_name)
    for name, _ in STOCK_SCENARIOS:
        if name not in catalogue.CATALOGUE:
            raise InputError(f"the demo needs scenario {name!r}, which this catalogue lacks")
    ok = True
    stock_cells = [
        parallel.Cell(name, catalogue.STOCK_TARGET, "posix", "pct", seed, budget, (), catalogue_name)
        for name, budget in STOCK_SCENARIOS
    ]
    found, _ = parallel.explore_cells(stock_cells)
    for cell in found:
        echo(f"stock: {cell_line(cell)}")
        if cell.failure is None:
            echo(f"demo: expected stock Lightning to race in {cell.scenario}, but no schedule failed")
            ok = False
            continue
        echo(failure_block(cell))
        _, again, trace = replay_cli_token(cell.failure.token)
        same = again is not None and trace == cell.failure.trace
        echo(f"replay of the token in this process: {'identical trace' if same else 'DIFFERENT trace'}")
        ok = ok and same
    legacy_target = getattr(catalogue, "LEGACY_TARGET", None)
    if legacy_target is not None and LEGACY_SCENARIO[0] in catalogue.CATALOGUE:
        name, fs, strategy, budget, wanted = LEGACY_SCENARIO
        (cell,), _ = parallel.explore_cells([parallel.Cell(name, legacy_target, fs, strategy, seed, budget, (),
                                                           catalogue_name, (("max_failures", wanted),))])
        echo(f"legacy: {cell_line(cell)}")
        seed_error = [f for f in cell.failures if f.message.startswith("PermissionError: [WinError 32]")]
        if seed_error:
            echo(f"the seed report's error, reproduced: {seed_error[0].message}")
            echo(f"replay it with: racecheck replay {seed_error[0].token}")
        else:
            got = "; ".join(f.message for f in cell.failures) or "no failure"
            echo(f"demo: expected PermissionError [WinError 32] from the Lightning 1.8 writer, got: {got}")
            ok = False
    fixed_cells = [
        parallel.Cell(name, catalogue.FIXED_TARGET, fs, strategy, seed, max(1, int(schedules * share)), (),
                      catalogue_name)
        for name, share in FIXED_SCENARIOS
        for fs in ("posix", "windows")
        if fs in catalogue.get(name).semantics
        for strategy in ("pct", "random")
    ]
    proof_name, cap = PROOF_SCENARIO
    proof_cells = [parallel.Cell(proof_name, catalogue.FIXED_TARGET, fs, "dpor", seed, cap, (), catalogue_name)
                   for fs in ("posix", "windows") if fs in catalogue.get(proof_name).semantics]
    verified, _ = parallel.explore_cells(fixed_cells + proof_cells)
    for cell in verified:
        echo(f"fixed: {cell_line(cell)}")
        if cell.failure is not None:
            echo(failure_block(cell))
            ok = False
        elif cell.strategy == "dpor" and not cell.exhausted:
            echo(f"demo: expected dpor to exhaust {cell.scenario} on the fixed IO within {cap} schedules")
            ok = False
    echo("demo: OK (race reproduced on stock Lightning, token replayed identically, WinError 32 reproduced on the 1.8 "
         "writer, fixed IO verified, and proven over every interleaving of delete-while-queued)"
         if ok else "demo: FAILED")
    return 0 if ok else 1
