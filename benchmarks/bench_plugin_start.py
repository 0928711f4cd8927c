"""What the racecheck pytest plugin adds to the start of every pytest session, marked tests or not.

Two measurements, each in fresh interpreters:

1. ``python -m pytest`` on an empty directory (collection finds nothing, exit status 5) with the plugin and with
   ``-p no:racecheck``, alternating so machine load drifts affect both alike; the table shows the median and the
   fastest run of each, and the ratio of the medians.
2. ``python -X importtime -c "import racecheck.pytest_plugin"``: how many racecheck modules the import loads, its
   cumulative time, and the racecheck entries with the largest cumulative times (median over the runs).

    python benchmarks/bench_plugin_start.py [--runs 15] [--import-runs 7] [--top 8]

The tests (tests/plugin/test_plugin_import_cost.py) check which modules the import loads; no test asserts a time.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

from rich.console import Console
from rich.table import Table

PYTEST = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
VARIANTS = (("with racecheck", []), ("-p no:racecheck", ["-p", "no:racecheck"]))


def time_start(directory: str, extra: list[str]) -> float:
    started = time.perf_counter()
    done = subprocess.run([*PYTEST, *extra], cwd=directory, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if done.returncode != 5:  # 5: no tests collected, the expected outcome on an empty directory
        raise SystemExit(f"pytest exited {done.returncode}: {done.stdout[-2000:]}{done.stderr[-2000:]}")
    return elapsed


def pytest_start(runs: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {name: [] for name, _ in VARIANTS}
    with tempfile.TemporaryDirectory() as directory:
        for _, extra in VARIANTS:  # one unmeasured run each: bytecode caches written, files in the page cache
            time_start(directory, extra)
        for _ in range(runs):
            for name, extra in VARIANTS:
                times[name].append(time_start(directory, extra))
    return times


def import_times(runs: int) -> dict[str, tuple[list[int], list[int], bool]]:
    """Per imported module: (self µs, cumulative µs) of each run of ``-X importtime``, and whether the import was
    a top-level one (not nested in another module's import)."""
    found: dict[str, tuple[list[int], list[int], bool]] = {}
    for run in range(runs + 1):
        done = subprocess.run([sys.executable, "-X", "importtime", "-c", "import racecheck.pytest_plugin"],
                              capture_output=True, text=True, check=True)
        if run == 0:
            continue  # the first run writes bytecode caches
        for line in done.stderr.splitlines():
            if not line.startswith("import time:") or "self [us]" in line:
                continue
            own, cumulative, name = line[len("import time:"):].split("|")
            entry = found.setdefault(name.strip(), ([], [], not name[1:].startswith(" ")))
            entry[0].append(int(own))
            entry[1].append(int(cumulative))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="pytest starts per variant")
    parser.add_argument("--import-runs", type=int, default=7, help="runs of -X importtime")
    parser.add_argument("--top", type=int, default=8, help="racecheck entries listed")
    args = parser.parse_args()
    console = Console()

    times = pytest_start(args.runs)
    base = statistics.median(times["-p no:racecheck"])
    table = Table(title=f"python -m pytest on an empty directory ({args.runs} alternating runs each)")
    for column in ("variant", "median s", "fastest s", "ratio to -p no:racecheck"):
        table.add_column(column, justify="left" if column == "variant" else "right")
    for name, _ in VARIANTS:
        median = statistics.median(times[name])
        table.add_row(name, f"{median:.3f}", f"{min(times[name]):.3f}", f"{median / base:.3f}")
    console.print(table)

    found = import_times(args.import_runs)
    ours = {name: (statistics.median(own), statistics.median(cumulative))
            for name, (own, cumulative, _) in found.items() if name.split(".")[0] == "racecheck"}
    top_level = sum(statistics.median(cumulative) for _, cumulative, top in found.values() if top)
    plugin = ours.get("racecheck.pytest_plugin", (0, 0))[1]
    beyond = plugin - statistics.median(found["pytest"][1]) if "pytest" in found else plugin
    table = Table(title=f"python -X importtime -c 'import racecheck.pytest_plugin' (median of {args.import_runs})")
    for column in ("module", "self µs", "cumulative µs"):
        table.add_column(column, justify="left" if column == "module" else "right")
    for name, (own, cumulative) in sorted(ours.items(), key=lambda item: -item[1][1])[: args.top]:
        table.add_row(name, f"{own:.0f}", f"{cumulative:.0f}")
    console.print(table)
    console.print(f"racecheck modules loaded: {len(ours)} ({', '.join(sorted(ours))}); "
                  f"their own time {sum(own for own, _ in ours.values()):.0f} µs; "
                  f"racecheck.pytest_plugin cumulative {plugin:.0f} µs, of which {beyond:.0f} µs beyond pytest's own "
                  f"import (stdlib modules pytest does not load included); all top-level imports {top_level:.0f} µs")
    console.print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
