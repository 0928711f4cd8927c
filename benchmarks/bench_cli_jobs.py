"""`racecheck run --jobs J` against `--jobs 1`, end to end (the command as a user runs it, process start included).

Explores clean cells (the fixed IO), so every run does exactly the requested schedules and the J runs do the same
work as the baseline; checks that every J reports the same schedule counts, then prints the table with the ratio.
The baseline (J=1) is measured in the same run. Two speed-ups: of the whole command (interpreter start, imports of
torch and Lightning, validation included) and of the exploration phase alone (``explore_wall_s`` in results.json).
Goal: >= 1.8x with J=2 on 2 cores.

    python benchmarks/bench_cli_jobs.py [--schedules N] [--jobs 1,2] [--scenario NAME] [--repeat R]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from rich.console import Console
from rich.table import Table

FIXED = "racecheck.fixed_impl:LockedAsyncCheckpointIO"


def run_once(scenario: str, schedules: int, jobs: int, fs: str) -> tuple[float, float, list[int]]:
    with tempfile.TemporaryDirectory() as report:
        cmd = [sys.executable, "-m", "racecheck", "run", scenario, "--target", FIXED, "--fs", fs,
               "--schedules", str(schedules), "--strategy", "random", "--jobs", str(jobs), "-q", "--report", report]
        started = time.perf_counter()
        out = subprocess.run(cmd, capture_output=True, text=True)
        elapsed = time.perf_counter() - started
        if out.returncode != 0:
            raise SystemExit(f"benchmark run failed ({out.returncode}): {out.stdout[-2000:]}{out.stderr[-2000:]}")
        with open(os.path.join(report, "results.json")) as handle:
            doc = json.load(handle)
    return elapsed, doc["run"]["explore_wall_s"], [cell["schedules"] for cell in doc["cells"]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="delete-while-queued")
    parser.add_argument("--fs", default="both")
    parser.add_argument("--schedules", type=int, default=2000)
    parser.add_argument("--jobs", default="1,2")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    jobs = [int(j) for j in args.jobs.split(",")]
    if 1 not in jobs:
        jobs.insert(0, 1)
    results: dict[int, list[float]] = {j: [] for j in jobs}
    explore: dict[int, list[float]] = {j: [] for j in jobs}
    counts: dict[int, list[int]] = {}
    for _ in range(args.repeat):
        for j in jobs:  # interleaved, so machine load drifts affect every J alike
            elapsed, exploring, counts[j] = run_once(args.scenario, args.schedules, j, args.fs)
            results[j].append(elapsed)
            explore[j].append(exploring)
    if any(c != counts[1] for c in counts.values()):
        raise SystemExit(f"different schedule counts across --jobs: {counts}")
    table = Table(title=f"racecheck run {args.scenario} --fs {args.fs} --schedules {args.schedules} (fixed IO, "
                        f"random), {os.cpu_count()} CPUs, best of {args.repeat}")
    table.add_column("--jobs", justify="right")
    table.add_column("command wall s", justify="right")
    table.add_column("speed-up", justify="right")
    table.add_column("exploration wall s", justify="right")
    table.add_column("schedules/s", justify="right")
    table.add_column("speed-up", justify="right")
    base, base_explore = min(results[1]), min(explore[1])
    total = sum(counts[1])
    for j in jobs:
        best, best_explore = min(results[j]), min(explore[j])
        table.add_row(str(j), f"{best:.1f}", f"{base / best:.2f}x", f"{best_explore:.1f}",
                      f"{total / best_explore:.0f}", f"{base_explore / best_explore:.2f}x")
    Console().print(table)


if __name__ == "__main__":
    main()
