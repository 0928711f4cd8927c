"""Time to detection: racecheck's strategies against plain repetition, on the stock Lightning target.

    python benchmarks/bench_scenarios.py [--seeds 20] [--scenarios a,b,...] [--plain-cap 200] [--plain-seconds 20]

Per scenario, measured in the same run:
  * random / pct: schedules to the first failure (median over ``--seeds`` seeds), and schedules per second;
  * dfs (preemption bound 2): schedules to the first failure (deterministic, seeds do not change it);
  * plain repetition: the scenario's workload run on the real disk with real, uncontrolled threads, over and over
    until its oracle fails (capped at ``--plain-cap`` runs or ``--plain-seconds`` seconds per trial), ``--seeds``
    trials: the median runs to the first failure (">cap" when most trials never failed), and runs per second.
Headline: plain runs-to-failure / pct schedules-to-failure, and the same ratio in seconds. Crash scenarios have no
plain counterpart (a real disk cannot be crashed from a test). Shrinking is off: this times the search alone.
Wall-clock figures; they are reported, never asserted.
"""

from __future__ import annotations

import argparse
import statistics
import time

import racecheck
from racecheck import scenarios
from rich.console import Console
from rich.table import Table

DEFAULT = ["delete-while-queued", "delete-while-writing", "load-while-pending", "teardown-flush",
           "error-propagation", "evict-before-commit", "crash-consistency", "resume-last", "workload",
           "trainer-fit-top2-epochs"]
SLOW = {"trainer-fit-top2-epochs": 5}  # seeds for scenarios whose schedule is a real Trainer.fit


def search(prepared, strategy: str, seeds: int, cap: int) -> tuple[list[int | None], int, float]:
    """Schedules to the first failure per seed (None: none within cap), total schedules, total seconds."""
    found: list[int | None] = []
    total, start = 0, time.perf_counter()
    for seed in range(seeds):
        result = racecheck.explore(prepared.fn, strategy=strategy, schedules=cap, seed=seed, shrink_budget=0,
                                   **prepared.explore_kwargs)
        total += result.schedules
        found.append(None if result.ok else result.schedules)
    return found, total, time.perf_counter() - start


def plain(prepared, trials: int, cap: int, seconds: float) -> tuple[list[int | None], int, float, int]:
    """Run the workload uncontrolled (real threads, real disk) until its oracle fails, ``trials`` times; also
    returns the fewest runs a trial that never failed made (its cap in runs, or what fitted in ``seconds``)."""
    found: list[int | None] = []
    total, start, fewest_missed = 0, time.perf_counter(), cap
    for _ in range(trials):
        deadline = time.perf_counter() + seconds
        hit, runs = None, 0
        for run in range(1, cap + 1):
            total, runs = total + 1, run
            try:
                prepared.fn()
            except Exception:  # noqa: BLE001 - the oracle (or the IO) failed: the race was seen
                hit = run
                break
            if time.perf_counter() > deadline:
                break
        if hit is None:
            fewest_missed = min(fewest_missed, runs)
        found.append(hit)
    return found, total, time.perf_counter() - start, fewest_missed


def median(found: list[int | None]) -> float | None:
    """Median with misses counted as infinite; None when half or more of the trials missed."""
    values = sorted(float("inf") if f is None else f for f in found)
    mid = statistics.median(values)
    return None if mid == float("inf") else mid


def fmt(value: float | None, cap: int) -> str:
    return f">{cap}" if value is None else f"{value:g}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--scenarios", default=",".join(DEFAULT))
    parser.add_argument("--cap", type=int, default=200, help="schedules per seed before giving up")
    parser.add_argument("--plain-cap", type=int, default=200)
    parser.add_argument("--plain-seconds", type=float, default=10.0)
    args = parser.parse_args()
    target = scenarios.load_target(scenarios.STOCK_TARGET)
    table = Table(title=f"Stock {scenarios.STOCK_TARGET}: schedules to first failure (median) and throughput")
    for column in ("scenario", "random", "pct", "dfs", "plain", "sched/s (pct)", "runs/s (plain)",
                   "plain/pct (runs)", "plain/pct (time)"):
        table.add_column(column, justify="left" if column == "scenario" else "right")
    console = Console(width=170)
    for name in args.scenarios.split(","):
        scenario = scenarios.get(name)
        seeds = min(args.seeds, SLOW.get(name, args.seeds))
        prepared = scenario.build(target, "posix")
        rnd, _, _ = search(prepared, "random", seeds, args.cap)
        pct, pct_total, pct_time = search(prepared, "pct", seeds, args.cap)
        dfs, _, _ = search(prepared, "dfs", 1, args.cap)
        pct_rate = pct_total / pct_time
        pct_median = median(pct)
        row = [f"{name} ({seeds} seeds)", fmt(median(rnd), args.cap), fmt(pct_median, args.cap),
               fmt(dfs[0], args.cap)]
        if "real" in scenario.semantics:
            plain_prepared = scenario.build(target, "real")
            runs, runs_total, runs_time, missed = plain(plain_prepared, seeds, args.plain_cap, args.plain_seconds)
            plain_rate = runs_total / runs_time
            plain_median = median(runs)
            row += [fmt(plain_median, missed), f"{pct_rate:.0f}", f"{plain_rate:.0f}"]
            if plain_median is None or pct_median is None:
                row += ["never" if plain_median is None else "-", "-"]
            else:
                row += [f"{plain_median / pct_median:.1f}x",
                        f"{(plain_median / plain_rate) / (pct_median / pct_rate):.1f}x"]
        else:
            row += ["n/a (crash)", f"{pct_rate:.0f}", "-", "-", "-"]
        table.add_row(*row)
        console.print(f"measured {name}", style="dim")
    console.print(table)
    console.print("plain/pct (runs): how many more tries plain repetition needs than pct; 'never': plain repetition "
                  "did not fail in most trials within its cap. (time): the same in seconds to the first failure.")


if __name__ == "__main__":
    main()
