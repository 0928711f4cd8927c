"""dpor's cost per schedule against random walk's, in machine instructions rather than seconds.

    python benchmarks/search_instructions.py [--no-scenarios] [--schedules 60] [--jobs 2]

``bench_strategies.py --overhead-only`` times the two strategies on the same program; on a shared 2-core VM the
same code gives ratios from 0.99 to 1.15 from one run to the next, too coarse for a goal of 10 %. This counts
instructions instead, with valgrind's callgrind (the same count every time for the same program and inputs,
whatever else the machine does). Each program and strategy runs in two child processes under callgrind: a
warm-up exploration and then ``W`` schedules, and the same with ``W + N``; the difference over ``N`` is the
instructions one schedule costs, the imports and the set-up cancelling out. The programs are
``bench_strategies``'s cost programs (the fixed futures program and, unless ``--no-scenarios``, the fixed IO on
delete-while-queued, teardown-flush and the generated workload).

What it leaves out: the kernel's side of a thread switch (callgrind counts the program's own instructions, and
serialises its threads). dpor's schedules switch threads less often than random's, so the wall clock favours
dpor a little more than this count does. Needs ``valgrind`` on the PATH; the children run with
``PYTHONHASHSEED=0``.
"""

from __future__ import annotations

import argparse
import gc
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

WARM_UP = 10  # schedules before the counted ones (the first schedules of a search build what the rest reuse)
_COLLECTED = re.compile(r"Collected\s*:\s*(\d+)")


def child(name: str, strategy: str, schedules: int) -> None:
    """Run in the child, under callgrind: a short exploration (imports, caches), then ``schedules`` of one."""
    import logging
    import warnings

    warnings.filterwarnings("ignore")
    logging.disable(logging.CRITICAL)
    import racecheck
    from bench_strategies import COST_SETTINGS, overhead_programs

    fn, options, _ = overhead_programs(name != "futures_order_fixed")[name]
    settings = {**COST_SETTINGS, **options}
    racecheck.explore(fn, strategy=strategy, schedules=3, **settings)
    # A full collection scans every object the imports made (~380,000 with Lightning); whether one lands among the
    # counted schedules depends on what ran before them, not on the strategy: that heap is frozen first.
    gc.collect()
    gc.freeze()
    result = racecheck.explore(fn, strategy=strategy, schedules=schedules, **settings)
    if result.schedules != schedules:
        sys.exit(f"{name}: {strategy} ran {result.schedules} schedules, not {schedules} (its space is smaller)")


def count(name: str, strategy: str, schedules: int) -> int:
    """Instructions of one child process under callgrind."""
    command = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, __file__,
               "--child", name, strategy, str(schedules)]
    done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": "0"},
                          cwd=os.path.dirname(os.path.abspath(__file__)))
    found = _COLLECTED.search(done.stderr)
    if done.returncode or not found:
        said = [line for line in done.stderr.splitlines() if line.strip() and not line.startswith("==")]
        raise SystemExit(f"search_instructions: {name} under {strategy} failed: {(said or ['no output'])[-1]}")
    return int(found.group(1))


def _refuse(why: str) -> None:
    """Bad input or a missing tool: one line, exit 2 (as the racecheck CLI does)."""
    print(f"search_instructions: {why}", file=sys.stderr)
    sys.exit(2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-scenarios", action="store_true", help="the futures program only (no Lightning import)")
    parser.add_argument("--schedules", type=int, default=60, help="schedules counted per program and strategy")
    parser.add_argument("--jobs", type=int, default=2, help="child processes at once")
    parser.add_argument("--child", nargs=3, metavar=("PROGRAM", "STRATEGY", "SCHEDULES"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        name, strategy, schedules = args.child
        child(name, strategy, int(schedules))
        return
    if args.schedules < 1 or args.jobs < 1:
        _refuse("--schedules and --jobs must be at least 1")
    if shutil.which("valgrind") is None:
        _refuse("valgrind is not on the PATH (Debian: apt install valgrind)")

    from bench_strategies import overhead_programs
    from rich.console import Console
    from rich.table import Table

    names = list(overhead_programs(not args.no_scenarios))
    jobs = [(name, strategy, n) for name in names for strategy in ("random", "dpor")
            for n in (WARM_UP, WARM_UP + args.schedules)]
    with ThreadPoolExecutor(args.jobs) as pool:
        counts = dict(zip(jobs, pool.map(lambda job: count(*job), jobs), strict=True))
    table = Table(title=f"instructions per schedule, dpor against random on the same program (callgrind, "
                        f"schedules {WARM_UP + 1}-{WARM_UP + args.schedules})")
    for column in ("program", "random", "dpor", "dpor/random"):
        table.add_column(column, justify="left" if column == "program" else "right")
    for name in names:
        per = {strategy: (counts[(name, strategy, WARM_UP + args.schedules)] - counts[(name, strategy, WARM_UP)])
               / args.schedules for strategy in ("random", "dpor")}
        table.add_row(name, f"{per['random']:,.0f}", f"{per['dpor']:,.0f}", f"{per['dpor'] / per['random']:.3f}")
    Console(width=150).print(table)


if __name__ == "__main__":
    main()
