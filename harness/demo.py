"""``racecheck demo``: the README's main job in one command.

1. Reproduce the upstream race on stock Lightning ``AsyncCheckpointIO``: ``delete-while-queued`` and ``trainer-fit``
   under POSIX semantics must each fail, with a token.
2. Replay each token the way ``racecheck replay`` does and check the trace is identical, byte for byte.
3. Verify the fixed IO (``racecheck.fixed_impl:LockedAsyncCheckpointIO``): the same scenarios stay clean under POSIX
   and Windows semantics with pct and random.

Returns the exit status: 0 when every step held, 1 otherwise.
"""

from __future__ import annotations

from collections.abc import Callable

from racecheck import parallel

__racecheck_engine__ = True

STOCK_SCENARIOS = (("delete-while-queued", 200), ("trainer-fit", 20))
FIXED_SCENARIOS = (("delete-while-queued", 1.0), ("trainer-fit", 0.05))  # share of --schedules (trainer-fit is slow)


def run_demo(schedules: int, seed: int, echo: Callable[[str], None]) -> int:
    from racecheck.cli import InputError, _catalogue, _cell_line, failure_block, replay_cli_token

    catalogue_name = parallel.catalogue_name()
    catalogue = _catalogue(catalogue_name)
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
        echo(f"stock: {_cell_line(cell)}")
        if cell.failure is None:
            echo(f"demo: expected stock Lightning to race in {cell.scenario}, but no schedule failed")
            ok = False
            continue
        echo(failure_block(cell))
        _, again, trace = replay_cli_token(cell.failure.token)
        same = again is not None and trace == cell.failure.trace
        echo(f"replay of the token in this process: {'identical trace' if same else 'DIFFERENT trace'}")
        ok = ok and same
    fixed_cells = [
        parallel.Cell(name, catalogue.FIXED_TARGET, fs, strategy, seed, max(1, int(schedules * share)), (),
                      catalogue_name)
        for name, share in FIXED_SCENARIOS
        for fs in ("posix", "windows")
        if fs in catalogue.get(name).semantics
        for strategy in ("pct", "random")
    ]
    verified, _ = parallel.explore_cells(fixed_cells)
    for cell in verified:
        echo(f"fixed: {_cell_line(cell)}")
        if cell.failure is not None:
            echo(failure_block(cell))
            ok = False
    echo("demo: OK (race reproduced on stock Lightning, token replayed identically, fixed IO verified)"
         if ok else "demo: FAILED")
    return 0 if ok else 1
