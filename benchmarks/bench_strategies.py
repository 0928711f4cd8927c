"""Strategy benchmark: schedules to the first failure for random, pct and pos, and the cost of line-level points.

    python benchmarks/bench_strategies.py [--seeds 10] [--budget 500] [--no-scenarios] [--lines-schedules 300]

1. For every classic bug (tests/engine/classic_bugs.py), and the stock-Lightning scenarios delete-while-queued and
   delete-while-writing on the fake posix filesystem, each strategy explores with seeds 0..N-1 (no shrinking, no
   racing-pair search): the table shows the mean number of schedules until the first failure (a miss counts as
   the budget), how many seeds found it, and the ratio to random walk measured in the same run (< 1: faster).
2. Line-level preemption: schedules per second of the same correct program (a locked counter) with and without
   ``preempt="lines"``, and the racy ``self.n += 1`` counter, found only with it.
Counts are deterministic (seeded); wall-clock figures vary with the machine and are reported, never asserted.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time

import racecheck
from racecheck.control import lines as racecheck_lines
from rich.console import Console
from rich.table import Table

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "engine"))

STRATEGIES = ("random", "pct", "pos")


def _classic() -> dict:
    from classic_bugs import BUGS

    return {name: (buggy, {}) for name, (buggy, _fixed, _needed) in sorted(BUGS.items())}


def _scenarios() -> dict:
    from racecheck import scenarios

    out = {}
    for name in ("delete-while-queued", "delete-while-writing"):
        prepared = scenarios.get(name).build(scenarios.load_target(scenarios.STOCK_TARGET), "posix")
        out[f"{name} (stock, posix)"] = (prepared.fn, dict(prepared.explore_kwargs))
    return out


def schedules_to_failure(fn, options: dict, strategy: str, seed: int, budget: int) -> int | None:
    result = racecheck.explore(
        fn, strategy=strategy, schedules=budget, seed=seed, shrink_budget=0, race_budget=0, **options
    )
    return None if result.ok else result.failure.schedule_index + 1


class Counter:
    def __init__(self) -> None:
        self.n = 0
        self.lock = threading.Lock()

    def racy(self) -> None:
        self.n += 1

    def locked(self) -> None:
        with self.lock:
            self.n += 1


def _two(method_name: str) -> None:
    counter = Counter()
    threads = [threading.Thread(target=getattr(counter, method_name)) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert counter.n == 2, f"lost update: n is {counter.n}"


def locked_counter() -> None:
    _two("locked")


def racy_counter() -> None:
    _two("racy")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--budget", type=int, default=500)
    parser.add_argument("--no-scenarios", action="store_true", help="classic bugs only (no Lightning import)")
    parser.add_argument("--lines-schedules", type=int, default=300)
    args = parser.parse_args()
    console = Console(width=150)

    workloads = _classic()
    if not args.no_scenarios:
        workloads.update(_scenarios())
    table = Table(title=f"schedules to the first failure (mean over {args.seeds} seeds, budget {args.budget})")
    table.add_column("bug")
    for strategy in STRATEGIES:
        table.add_column(strategy, justify="right")
        if strategy != "random":
            table.add_column(f"{strategy}/random", justify="right")
    for name, (fn, options) in workloads.items():
        means = {}
        cells = []
        for strategy in STRATEGIES:
            counts = [schedules_to_failure(fn, options, strategy, seed, args.budget) for seed in range(args.seeds)]
            found = sum(c is not None for c in counts)
            means[strategy] = sum(c if c is not None else args.budget for c in counts) / len(counts)
            cells.append(f"{means[strategy]:.1f} ({found}/{args.seeds})")
            if strategy != "random":
                cells.append(f"{means[strategy] / means['random']:.2f}")
        table.add_row(name, *cells)
    console.print(table)

    backend = "sys.monitoring" if racecheck_lines.uses_monitoring() else "sys.settrace"
    lines = Table(title=f"line-level preemption: cost and what it finds (Python {sys.version.split()[0]})")
    for column in ("program", "preempt", "backend", "schedules", "seconds", "schedules/s", "ratio", "result"):
        lines.add_column(column, justify="right" if column not in ("program", "result", "backend") else "left")
    base_rate = None
    runs = [(locked_counter, None, "-"), (locked_counter, "lines", backend), (racy_counter, None, "-"),
            (racy_counter, "lines", backend)]
    if racecheck_lines.uses_monitoring():  # the same programs through the 3.10/3.11 backend, for comparison
        runs += [(locked_counter, "lines", "sys.settrace"), (racy_counter, "lines", "sys.settrace")]
    real_choice = racecheck_lines.uses_monitoring
    for fn, preempt, used in runs:
        if used == "sys.settrace":
            racecheck_lines.uses_monitoring = lambda: False
        started = time.perf_counter()
        try:
            result = racecheck.explore(fn, strategy="random", schedules=args.lines_schedules, seed=0,
                                       preempt=preempt, skip_duplicates=False, shrink_budget=0, race_budget=0)
        finally:
            racecheck_lines.uses_monitoring = real_choice
        seconds = time.perf_counter() - started
        rate = result.schedules / seconds
        if base_rate is None:
            base_rate = rate
        outcome = "ok" if result.ok else f"found at schedule {result.failure.schedule_index + 1}"
        lines.add_row(fn.__name__, str(preempt), used, str(result.schedules), f"{seconds:.2f}", f"{rate:.0f}",
                      f"{rate / base_rate:.2f}", outcome)
    console.print(lines)


if __name__ == "__main__":
    main()
