"""Strategy benchmark: schedules to the first failure, exhaustion by dfs and dpor, and the cost of line points.

    python benchmarks/bench_strategies.py [--seeds 10] [--budget 500] [--no-scenarios] [--lines-schedules 300]
        [--exhaust-cap 200000] [--no-exhaustion] [--peer-runs 10] [--overhead-rounds 5] [--overhead-only]

1. For every classic bug (tests/engine/classic_bugs.py), and the stock-Lightning scenarios delete-while-queued and
   delete-while-writing on the fake posix filesystem, each strategy explores with seeds 0..N-1 (no shrinking, no
   racing-pair search): the table shows the mean number of schedules until the first failure (a miss counts as
   the budget), how many seeds found it, and the ratio to random walk measured in the same run (< 1: faster).
   dpor is deterministic (its seed changes nothing): its column is the one count, with the ratio to random.
2. Exhaustion, dfs against dpor, measured in the same run: for every classic program (bugs and fixes), the
   schedules, interleavings and seconds until each of dfs at preemption bound 2, dfs with no bound and dpor with no
   bound has run its whole space (every failure kept: ``max_failures`` high, no shrinking), with dpor's schedules
   and seconds as a ratio to unbounded dfs's. Then the engine's cost per schedule under dpor against random walk's
   on the same program, the same number of schedules (the fixed futures program and, with the scenarios, the fixed
   IO on delete-while-queued, teardown-flush and the generated workload), with the share of dpor's time its own
   search takes (``--overhead-only`` prints that table alone).
3. Against a peer: racecheck's dpor and frontrun 0.7's DPOR (``benchmarks/frontrun_side.py``, run under frontrun's
   launcher when ``frontrun`` is installed) on ``peer_programs.py`` (frontrun's headline counter rebuilt from its
   description, three classic bugs and their twins, no marks on either side), the locked and racy counters and on
   stock Lightning's race in three
   calls: found how often, in how many executions, and whether a replay reproduces it.
4. Line-level preemption: schedules per second of the same correct program (a locked counter) with and without
   ``preempt="lines"``, and the racy ``self.n += 1`` counter, found only with it.
Counts are deterministic (seeded); wall-clock figures vary with the machine and are reported, never asserted.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import threading
import time

import racecheck
from racecheck.control import lines as racecheck_lines
from rich.console import Console
from rich.table import Table

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "engine"))

STRATEGIES = ("random", "pct", "pos", "dpor")


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


def exhaust(fn, strategy: str, bound, cap: int) -> tuple[racecheck.Result, float]:
    """Run ``strategy`` until its space is done (or ``cap`` schedules), keeping every failure; and the seconds."""
    started = time.perf_counter()
    result = racecheck.explore(fn, strategy=strategy, preemption_bound=bound, schedules=cap, max_failures=10**6,
                               shrink_budget=0, race_budget=0)
    return result, time.perf_counter() - started


def exhaustion_table(cap: int) -> Table:
    from classic_bugs import BUGS

    table = Table(title=f"schedules / interleavings / seconds to exhaustion (cap {cap}; x: not exhausted)")
    for column in ("program", "dfs bound 2", "dfs unbounded", "dpor", "dpor/dfs schedules", "dpor/dfs seconds"):
        table.add_column(column, justify="left" if column == "program" else "right")
    for name in sorted(BUGS):
        for fn in BUGS[name][:2]:
            cells, runs = [], []
            for strategy, bound in (("dfs", 2), ("dfs", None), ("dpor", None)):
                result, seconds = exhaust(fn, strategy, bound, cap)
                runs.append((result, seconds))
                mark = "" if result.exhausted else " x"
                cells.append(f"{result.schedules}{mark} / {result.interleavings} / {seconds:.2f}s")
            (full, full_s), (reduced, reduced_s) = runs[1], runs[2]
            table.add_row(fn.__name__, *cells, f"{reduced.schedules / full.schedules:.4f}",
                          f"{reduced_s / max(full_s, 1e-9):.4f}")
    return table


# How the cost tables explore (here and in ``search_instructions.py``): no bound, every schedule run and counted,
# no shrinking or racing-pair search after a failure.
COST_SETTINGS = dict(preemption_bound=None, skip_duplicates=False, shrink_budget=0, race_budget=0)


def overhead_programs(scenarios_too: bool) -> dict:
    """name -> (fn, explore options, schedules): the fixed futures program (27 steps a schedule: the search's
    share is largest there) and, with the scenarios, the fixed IO on three of its small scenarios."""
    from classic_bugs import futures_order_fixed

    programs = {"futures_order_fixed": (futures_order_fixed, {}, 150)}
    if scenarios_too:
        from racecheck import scenarios

        fixed = scenarios.load_target(scenarios.FIXED_TARGET)
        for name, schedules in (("delete-while-queued", 79), ("teardown-flush", 200), ("workload", 200)):
            prepared = scenarios.get(name).build(fixed, "posix")
            programs[f"{name} (fixed IO, posix)"] = (prepared.fn, dict(prepared.explore_kwargs), schedules)
    return programs


def _search_share(fn, options: dict, schedules: int) -> float:
    """The share of one dpor exploration's time spent in the search's own code (its decisions and the analysis
    after each execution; the timing adds a little to both). Its decisions run in controlled threads, where the
    engine's virtual clock stands in for ``time.perf_counter``: timed with ``clock_gettime``, which it leaves
    alone."""
    from racecheck.search import dpor

    spent = [0.0]
    originals = {}

    def timed(cls, name):
        original = originals[(cls, name)] = getattr(cls, name)

        def wrapper(*args, **kwargs):
            started = time.clock_gettime(time.CLOCK_MONOTONIC)
            try:
                return original(*args, **kwargs)
            finally:
                spent[0] += time.clock_gettime(time.CLOCK_MONOTONIC) - started
        setattr(cls, name, wrapper)

    for cls, name in ((dpor.DPOR, "end_execution"), (dpor.DPORChooser, "pick_thread"),
                      (dpor.DPORChooser, "pick_value")):
        timed(cls, name)
    gc.collect()
    started = time.perf_counter()
    try:
        racecheck.explore(fn, strategy="dpor", schedules=schedules, **COST_SETTINGS, **options)
    finally:
        for (cls, name), original in originals.items():
            setattr(cls, name, original)
    return spent[0] / (time.perf_counter() - started)


def overhead_table(scenarios_too: bool, rounds: int = 5) -> Table:
    """Seconds per schedule of dpor and random on the same program, the same number of schedules each, best of
    ``rounds`` alternating runs; and, from a separate run, the share of dpor's time spent in the search itself."""
    table = Table(title=f"cost per schedule, dpor against random on the same program (best of {rounds} alternating "
                        "runs each)")
    for column in ("program", "schedules", "random us/schedule", "dpor us/schedule", "dpor/random",
                   "search's share of dpor"):
        table.add_column(column, justify="right" if column != "program" else "left")
    programs = overhead_programs(scenarios_too)
    # A full collection scans every object the imports made (~380,000 with Lightning: ~135 ms), and when one lands
    # in a timed run is an accident of what ran before, not a cost of the strategy: the heap so far is frozen, and
    # each run starts from a collection.
    gc.collect()
    gc.freeze()
    try:
        for name, (fn, options, schedules) in programs.items():
            rates: dict[str, float] = {}
            for _ in range(rounds):  # alternate, keep each one's best: load on a shared machine hits both alike
                for strategy in ("random", "dpor"):
                    gc.collect()
                    started = time.perf_counter()
                    result = racecheck.explore(fn, strategy=strategy, schedules=schedules, **COST_SETTINGS,
                                               **options)
                    per = (time.perf_counter() - started) / result.schedules * 1e6
                    rates[strategy] = min(rates.get(strategy, per), per)
            share = _search_share(fn, options, schedules)
            table.add_row(name, str(schedules), f"{rates['random']:.0f}", f"{rates['dpor']:.0f}",
                          f"{rates['dpor'] / rates['random']:.2f}", f"{share * 100:.0f} %")
    finally:
        gc.unfreeze()
    return table


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


def minimal_checkpoint_race() -> None:
    """Stock Lightning's race in three calls: save(a), remove(a), teardown(); a.ckpt must be gone afterwards."""
    import torch
    from lightning.fabric.plugins import TorchCheckpointIO
    from lightning.pytorch.plugins.io.async_plugin import AsyncCheckpointIO
    from racecheck import fakefs

    path = fakefs.root() + "/a.ckpt"
    io = AsyncCheckpointIO(TorchCheckpointIO())
    io.save_checkpoint({"step": 1, "w": torch.zeros(4)}, path)
    io.remove_checkpoint(path)
    io.teardown()
    assert not os.path.exists(path), "leaked checkpoint a.ckpt"


def _frontrun_side(runs: int) -> dict | str:
    """frontrun's figures from benchmarks/frontrun_side.py under its launcher, or why there are none."""
    import json
    import shutil
    import subprocess

    launcher = shutil.which("frontrun")
    if launcher is None:
        return "frontrun not installed (pip install frontrun==0.7.0)"
    script = os.path.join(os.path.dirname(__file__), "frontrun_side.py")
    try:
        done = subprocess.run([launcher, sys.executable, script, "--runs", str(runs)], capture_output=True,
                              text=True, timeout=1800)
    except subprocess.TimeoutExpired:
        return "frontrun did not finish within 30 minutes"
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return f"frontrun failed (exit {done.returncode}): {tail}"
    return json.loads(lines[-1])


def _peer_programs_racecheck() -> dict[str, tuple[str, int, float]]:
    """``peer_programs.PROGRAMS`` under racecheck's dpor with memory watching (the default) and no marks: the
    verdict, schedules to the first failure or to exhaustion, and seconds (after one warm-up exploration, as
    frontrun's side runs after its counters)."""
    import peer_programs

    racecheck.explore(peer_programs.as_test(peer_programs.PROGRAMS[0]), strategy="dpor", schedules=10)
    out = {}
    for program in peer_programs.PROGRAMS:
        started = time.perf_counter()
        result = racecheck.explore(peer_programs.as_test(program), strategy="dpor", schedules=100_000,
                                   shrink_budget=0, race_budget=0)
        seconds = time.perf_counter() - started
        if result.failure is not None:
            out[program.name] = (f"{result.failure.kind} found", result.failure.schedule_index + 1, seconds)
        else:
            out[program.name] = (result.exhausted_note or "clean, not exhausted", result.schedules, seconds)
    return out


def peer_table(runs: int) -> Table:
    """racecheck's dpor and frontrun 0.7's DPOR, in the same run, on the same minimal programs."""
    import logging

    logging.disable(logging.CRITICAL)
    table = Table(title=f"dpor against frontrun's DPOR on the same minimal workloads ({runs} runs of the checkpoint "
                        "race each)")
    for column in ("workload", "tool", "result", "executions", "seconds", "replay reproduces"):
        table.add_column(column, justify="left" if column in ("workload", "tool", "result") else "right")
    started = time.perf_counter()
    locked = racecheck.explore(locked_counter, strategy="dpor", schedules=100_000)
    table.add_row("locked counter", "racecheck dpor", locked.exhausted_note or "not exhausted",
                  str(locked.schedules), f"{time.perf_counter() - started:.2f}", "-")
    started = time.perf_counter()
    racy = racecheck.explore(racy_counter, strategy="dpor", schedules=100_000, shrink_budget=0, race_budget=0)
    table.add_row("racy counter", "racecheck dpor", "lost update found" if not racy.ok else "missed",
                  str(racy.failure.schedule_index + 1 if not racy.ok else racy.schedules),
                  f"{time.perf_counter() - started:.2f}", "-")
    found = reproduced = 0
    seconds = 0.0
    counts = []
    for _ in range(runs):
        started = time.perf_counter()
        result = racecheck.explore(minimal_checkpoint_race, strategy="dpor", schedules=2_000, fs="posix",
                                   shrink_budget=0, race_budget=0)
        seconds += time.perf_counter() - started
        counts.append(result.failure.schedule_index + 1 if not result.ok else result.schedules)
        if not result.ok:
            found += 1
            again = racecheck.replay(minimal_checkpoint_race, result.failure.token, fs="posix")
            reproduced += int(not again.ok and again.failure.trace == result.failure.trace)
    table.add_row("checkpoint race", "racecheck dpor (fake posix fs)", f"leak found in {found}/{runs} runs",
                  "/".join(sorted(set(map(str, counts)))), f"{seconds:.2f}", f"{reproduced}/{found} (same trace)")
    ours = _peer_programs_racecheck()
    for name, (verdict, schedules, seconds) in ours.items():
        table.add_row(name, "racecheck dpor", verdict, str(schedules), f"{seconds:.3f}", "-")
    peer = _frontrun_side(runs)
    if isinstance(peer, str):
        table.add_row("all", "frontrun", peer, "-", "-", "-")
        return table
    for name, row in peer.get("programs", {}).items():
        verdict = row.get("error") or ("violation found" if row["found"] else
                                       "clean, exhausted" if row["exhausted"] else "clean (no exhaustion claim)")
        table.add_row(name, f"frontrun {peer['version']} DPOR", verdict, str(row["executions"]),
                      f"{row['seconds']:.3f}", "-")
    tool = f"frontrun {peer['version']} DPOR"
    for key, name in (("locked_counter", "locked counter"), ("racy_counter", "racy counter")):
        row = peer[key]
        verdict = ("lost update found" if row["found"] else "missed") if key == "racy_counter" else \
            ("no failure" if not row["found"] else "false alarm")
        table.add_row(name, tool, verdict, str(row["executions"]), f"{row['seconds']:.2f}", "-")
    race = peer["checkpoint_race"]
    table.add_row("checkpoint race", f"{tool} (real disk)", f"leak found in {race['found']}/{race['runs']} runs",
                  "/".join(sorted(set(map(str, race["executions"])))), f"{race['seconds']:.2f}",
                  f"{race['reproduced']}/{race['attempts']} of its own replays")
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--budget", type=int, default=500)
    parser.add_argument("--no-scenarios", action="store_true", help="classic bugs only (no Lightning import)")
    parser.add_argument("--lines-schedules", type=int, default=300)
    parser.add_argument("--exhaust-cap", type=int, default=200_000)
    parser.add_argument("--no-exhaustion", action="store_true", help="skip the dfs/dpor exhaustion tables")
    parser.add_argument("--overhead-rounds", type=int, default=5, help="alternating runs per program in the cost "
                        "table (its best is kept)")
    parser.add_argument("--overhead-only", action="store_true", help="only the cost-per-schedule table")
    parser.add_argument("--peer-only", action="store_true", help="only the table against frontrun")
    parser.add_argument("--peer-runs", type=int, default=10,
                        help="runs of the checkpoint race per tool in the frontrun table (0: no frontrun table)")
    args = parser.parse_args()
    console = Console(width=150)
    if args.overhead_only:
        console.print(overhead_table(not args.no_scenarios, args.overhead_rounds))
        return
    if args.peer_only:
        console.print(peer_table(max(args.peer_runs, 1)))
        return

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
            seeds = 1 if strategy == "dpor" else args.seeds  # deterministic: every seed runs the same schedules
            counts = [schedules_to_failure(fn, options, strategy, seed, args.budget) for seed in range(seeds)]
            found = sum(c is not None for c in counts)
            means[strategy] = sum(c if c is not None else args.budget for c in counts) / len(counts)
            cells.append(f"{means[strategy]:.1f} ({found}/{seeds})")
            if strategy != "random":
                cells.append(f"{means[strategy] / means['random']:.2f}")
        table.add_row(name, *cells)
    console.print(table)

    if not args.no_exhaustion:
        console.print(exhaustion_table(args.exhaust_cap))
        console.print(overhead_table(not args.no_scenarios, args.overhead_rounds))
    if args.peer_runs and not args.no_scenarios:
        console.print(peer_table(args.peer_runs))

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
