"""Time to detection: racecheck's strategies against plain repetition, on the stock Lightning target.

    python benchmarks/bench_scenarios.py [--seeds 20] [--scenarios a,b,...] [--plain-cap 200] [--plain-seconds 20]
        [--exhaust a,b,...] [--exhaust-seconds 600] [--dfs-seconds S] [--memory-seeds 10] [--memory-cap 600]
        [--memory-scenarios a,b,...]

(``--scenarios '' --exhaust ''`` prints the memory on/off table alone.)

Per scenario, measured in the same run:
  * random / pct: schedules to the first failure (median over ``--seeds`` seeds), and schedules per second;
  * dfs (preemption bound 2) and dpor (no bound): schedules to the first failure (deterministic, seeds do not
    change it);
  * plain repetition: the scenario's workload run on the real disk with real, uncontrolled threads, over and over
    until its oracle fails (capped at ``--plain-cap`` runs or ``--plain-seconds`` seconds per trial), ``--seeds``
    trials: the median runs to the first failure (">cap" when most trials never failed), and runs per second.
Headline: plain runs-to-failure / pct schedules-to-failure, and the same ratio in seconds. Crash scenarios have no
plain counterpart (a real disk cannot be crashed from a test). Shrinking is off: this times the search alone.
Then memory on and off (``--memory-seeds``, 0 to skip): per race of the catalogue (the stock target on posix and
windows, and Lightning 1.8's writer under windows semantics, where the seed report's WinError 32 is counted apart
from the leak that comes first) and per classic bug (tests/engine/classic_bugs.py), pct's and random's median
schedules to that failure with memory watched (the default) and with ``memory=False``, and their ratio: with memory
watched, the steps no other thread can conflict with are neither PCT decisions nor random switches
(``racecheck.search.shared_memory``), so where memory plays no part the ratio stays near 1.
Then, against the fixed target (``racecheck.fixed_impl.LockedAsyncCheckpointIO``), on the small scenarios named by
``--exhaust`` under posix and windows: schedules, interleavings and seconds until dfs at bound 2, dfs with no bound
and dpor with no bound run their whole space, dpor stopped after ``--exhaust-seconds`` and each dfs run after
``--dfs-seconds`` (then the count so far, and "not exhausted"), with dpor's seconds as a ratio to dfs at bound 2
measured in the same run.
Wall-clock figures; they are reported, never asserted.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import racecheck
from racecheck import scenarios
from rich.console import Console
from rich.markup import escape
from rich.table import Table

EXHAUST = ["delete-while-queued", "teardown-flush", "windows-replace-open", "workload"]
DEFAULT = ["delete-while-queued", "delete-while-writing", "load-while-pending", "teardown-flush",
           "error-propagation", "evict-before-commit", "crash-consistency", "resume-last", "workload",
           "trainer-fit-top2-epochs"]
SLOW = {"trainer-fit-top2-epochs": 5}  # seeds for scenarios whose schedule is a real Trainer.fit
# the memory on/off table: the stock target's races, and the Lightning 1.8 writer's WinError 32 under windows
MEMORY = ["delete-while-queued", "delete-while-writing", "load-while-pending", "teardown-flush", "error-propagation",
          "evict-before-commit", "crash-consistency", "resume-last", "workload"]
WINERROR = "PermissionError: [WinError 32]"


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


class _Stop(Exception):
    """The time budget of one exhaustion run is spent."""


def exhaust(prepared, strategy: str, bound, seconds: float) -> tuple[int, int, bool, float]:
    """(schedules, interleavings, exhausted, seconds) of ``strategy`` run until its space is done or ``seconds``
    pass (checked between schedules; the count so far is kept)."""
    seen = {"schedules": 0, "interleavings": 0}
    start = time.perf_counter()

    def progress(snapshot) -> None:
        seen["schedules"], seen["interleavings"] = snapshot.schedules, snapshot.interleavings
        if time.perf_counter() - start > seconds and not snapshot.exhausted:
            raise _Stop

    try:
        result = racecheck.explore(prepared.fn, strategy=strategy, preemption_bound=bound, schedules=10**7,
                                   shrink_budget=0, progress=progress, **prepared.explore_kwargs)
    except _Stop:
        return seen["schedules"], seen["interleavings"], False, time.perf_counter() - start
    return result.schedules, result.interleavings, result.exhausted, time.perf_counter() - start


def exhaustion_table(names: list[str], seconds: float, dfs_seconds: float) -> Table:
    fixed = scenarios.load_target(scenarios.FIXED_TARGET)
    table = Table(title=f"Fixed IO: schedules / interleavings / seconds to exhaustion (dpor stopped after "
                        f"{seconds:g}s, dfs after {dfs_seconds:g}s)")
    for column in ("scenario", "dfs bound 2", "dfs unbounded", "dpor", "dpor/dfs-2 seconds"):
        table.add_column(column, justify="left" if column == "scenario" else "right")
    for name in names:
        for fs in ("posix", "windows"):
            prepared = scenarios.get(name).build(fixed, fs)
            cells, times = [], []
            for strategy, bound in (("dfs", 2), ("dfs", None), ("dpor", None)):
                budget = seconds if strategy == "dpor" else dfs_seconds
                schedules, interleavings, done, took = exhaust(prepared, strategy, bound, budget)
                times.append(took)
                cells.append(f"{schedules}{'' if done else ' (not exhausted)'} / {interleavings} / {took:.0f}s")
            table.add_row(escape(f"{name} [{fs}]"), *cells, f"{times[2] / times[0]:.2f}")
    return table


def to_failure(fn, options: dict, strategy: str, seed: int, cap: int, memory: bool, match: str) -> int | None:
    """Schedules until the first failure whose message starts with ``match`` (None: none within ``cap``)."""
    extra = {"max_failures": 5} if match else {}
    result = racecheck.explore(fn, strategy=strategy, schedules=cap, seed=seed, shrink_budget=0, race_budget=0,
                               **{**options, "memory": memory, **extra})
    found = [f.schedule_index + 1 for f in result.failures if f.message.startswith(match)]
    return min(found) if found else None


def memory_programs(names: list[str]):
    """(label, fn, explore options, failure prefix) of the memory on/off table."""
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "engine"))
    from classic_bugs import BUGS

    stock = scenarios.load_target(scenarios.STOCK_TARGET)
    for name in names:
        for fs in ("posix", "windows"):
            prepared = scenarios.get(name).build(stock, fs)
            yield f"{name} [{fs}]", prepared.fn, dict(prepared.explore_kwargs), ""
    legacy = scenarios.get("delete-while-writing").build(scenarios.load_target(scenarios.LEGACY_TARGET), "windows")
    yield "delete-while-writing [windows], Lightning 1.8: WinError 32", legacy.fn, dict(legacy.explore_kwargs), WINERROR
    for name, (buggy, _fixed, _needed) in sorted(BUGS.items()):
        yield f"classic {name}", buggy, {}, ""


def memory_table(names: list[str], seeds: int, cap: int) -> Table:
    table = Table(title=f"Schedules to the failure (median of {seeds} seeds, cap {cap}): memory watched and "
                        "memory=False")
    for column in ("program", "pct memory", "pct memory=False", "pct ratio", "random memory", "random memory=False",
                   "random ratio"):
        table.add_column(column, justify="left" if column == "program" else "right")
    for label, fn, options, match in memory_programs(names):
        row = [escape(label)]
        for strategy in ("pct", "random"):
            on, off = (median([to_failure(fn, options, strategy, seed, cap, memory, match) for seed in range(seeds)])
                       for memory in (True, False))
            ratio = "-" if on is None or off is None else f"{on / off:.2f}"
            row += [fmt(on, cap), fmt(off, cap), ratio]
        table.add_row(*row)
    return table


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
    parser.add_argument("--memory-seeds", type=int, default=10, help="seeds of the memory on/off table (0: skip it)")
    parser.add_argument("--memory-cap", type=int, default=600, help="schedules per seed in the memory on/off table")
    parser.add_argument("--memory-scenarios", default=",".join(MEMORY))
    parser.add_argument("--exhaust", default=",".join(EXHAUST), help="small scenarios to exhaust ('' for none)")
    parser.add_argument("--exhaust-seconds", type=float, default=600.0)
    parser.add_argument("--dfs-seconds", type=float, default=None,
                        help="time budget of each dfs exhaustion run (default: --exhaust-seconds)")
    args = parser.parse_args()
    target = scenarios.load_target(scenarios.STOCK_TARGET)
    table = Table(title=f"Stock {scenarios.STOCK_TARGET}: schedules to first failure (median) and throughput")
    for column in ("scenario", "random", "pct", "dfs", "dpor", "plain", "sched/s (pct)", "runs/s (plain)",
                   "plain/pct (runs)", "plain/pct (time)"):
        table.add_column(column, justify="left" if column == "scenario" else "right")
    console = Console(width=170)
    for name in filter(None, args.scenarios.split(",")):
        scenario = scenarios.get(name)
        seeds = min(args.seeds, SLOW.get(name, args.seeds))
        prepared = scenario.build(target, "posix")
        rnd, _, _ = search(prepared, "random", seeds, args.cap)
        pct, pct_total, pct_time = search(prepared, "pct", seeds, args.cap)
        dfs, _, _ = search(prepared, "dfs", 1, args.cap)
        dpor, _, _ = search(prepared, "dpor", 1, args.cap)
        pct_rate = pct_total / pct_time
        pct_median = median(pct)
        row = [f"{name} ({seeds} seeds)", fmt(median(rnd), args.cap), fmt(pct_median, args.cap),
               fmt(dfs[0], args.cap), fmt(dpor[0], args.cap)]
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
    if args.scenarios:
        console.print(table)
        console.print("plain/pct (runs): how many more tries plain repetition needs than pct; 'never': plain "
                      "repetition did not fail in most trials within its cap. (time): the same in seconds to the "
                      "first failure.")
    if args.memory_seeds:
        names = [name for name in args.memory_scenarios.split(",") if name]
        console.print(memory_table(names, args.memory_seeds, args.memory_cap))
    if args.exhaust:
        dfs_seconds = args.exhaust_seconds if args.dfs_seconds is None else args.dfs_seconds
        console.print(exhaustion_table(args.exhaust.split(","), args.exhaust_seconds, dfs_seconds))


if __name__ == "__main__":
    main()
