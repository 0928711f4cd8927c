"""Deterministic counts of what the engine executes per schedule: Python bytecodes and calls, engine against workload.

    python benchmarks/engine_counts.py [--schedules 50] [--workload micro|noop] [--top 25]
        [--variant defaults|memory|off] [--by-file] [--plain 0]

Wall-clock A/B runs on a shared VM cannot resolve a change worth a few percent of the engine's cost (a pair of the
micro workload swings by +-20 points), so every performance pass also counted what does not vary from run to run:
the bytecodes and Python calls executed under ``sys.settrace`` with opcode events (every thread, ``threading.settrace``
too), split into the engine's own (``harness/``) and everything else (the workload, torch, the stdlib). The same
tree gives the same counts on every run; a change that trims the engine shows up here even when the benchmark's noise
hides it. The table lists the engine functions that execute the most bytecodes per schedule, with the ratio of the
engine's bytecodes to the workload's measured in the same run. Tracing makes everything ~20x slower: counts only.
Pair it with ``benchmarks/fingerprint.py``, which tells whether a change left schedules and traces as they were.
"""

from __future__ import annotations

import argparse
import collections
import os
import shutil
import sys
import tempfile
import threading

from rich.console import Console
from rich.table import Table

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_engine  # noqa: E402 - the workloads live there, next to this file
import racecheck  # noqa: E402

# The engine's files: the racecheck package's own directory (``harness/`` in a checkout; another tree's package put
# first on PYTHONPATH, to count a base against a branch, is counted as the engine too)
ENGINE_DIR = os.path.dirname(os.path.abspath(racecheck.__file__)) + os.sep


def count(workload, schedules: int, variant: str = "defaults",
          plain: int = 0) -> tuple[collections.Counter, collections.Counter]:
    """Bytecodes and calls per (file, function) over one exploration of ``schedules`` schedules (pct, seed 0),
    watching what ``bench_engine.VARIANTS[variant]`` says, after ``plain`` uncontrolled runs of ``workload`` (as
    each of ``bench_engine``'s pairs runs its plain loop first: what state the program's libraries keep across
    runs can change what the exploration learns and runs, see docs/performance.md)."""
    bytecodes: collections.Counter = collections.Counter()
    calls: collections.Counter = collections.Counter()

    def per_opcode(frame, event, arg):
        if event == "opcode":
            code = frame.f_code
            bytecodes[(code.co_filename, code.co_name)] += 1
        return per_opcode

    def per_call(frame, event, arg):
        calls[(frame.f_code.co_filename, frame.f_code.co_name)] += 1
        frame.f_trace_opcodes = True
        return per_opcode

    bench_engine.explore_workload(workload, schedules, variant=variant)  # warm: imports, caches, carriers
    for _ in range(plain):
        workload()
    threading.settrace(per_call)
    sys.settrace(per_call)
    try:
        bench_engine.explore_workload(workload, schedules, variant=variant)
    finally:
        sys.settrace(None)
        threading.settrace(None)
    return bytecodes, calls


def _by_file(counts: collections.Counter) -> collections.Counter:
    tallied: collections.Counter = collections.Counter()
    for (filename, _name), value in counts.items():
        tallied[(filename, "*")] += value
    return tallied


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--schedules", type=int, default=50)
    parser.add_argument("--workload", choices=("micro", "noop"), default="micro")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--variant", choices=tuple(bench_engine.VARIANTS), default="defaults",
                        help="what the exploration watches (bench_engine.VARIANTS; default: every default)")
    parser.add_argument("--by-file", action="store_true", help="tally the engine's bytecodes per file, not function")
    parser.add_argument("--plain", type=int, default=0,
                        help="uncontrolled runs of the workload right before the counted exploration (bench_engine's "
                             "pairs run 100; 1 is enough to leave the libraries' state as they do)")
    args = parser.parse_args()
    if args.schedules < 1 or args.top < 0 or args.plain < 0:
        parser.error("--schedules must be >= 1, --top and --plain >= 0")
    directory = tempfile.mkdtemp(prefix="racecheck-counts-")
    try:
        if args.workload == "micro":
            def workload() -> None:
                bench_engine.micro_workload(directory)
        else:
            workload = bench_engine.noop_workload
        workload()
        bytecodes, calls = count(workload, args.schedules, args.variant, args.plain)
    finally:
        shutil.rmtree(directory, ignore_errors=True)

    n = args.schedules
    if args.by_file:
        bytecodes = _by_file(bytecodes)
        calls = _by_file(calls)
    engine = {key: value for key, value in bytecodes.items() if ENGINE_DIR in key[0]}
    engine_total = sum(engine.values()) / n
    other_total = (sum(bytecodes.values()) - sum(engine.values())) / n
    engine_calls = sum(value for key, value in calls.items() if ENGINE_DIR in key[0]) / n
    other_calls = (sum(calls.values()) / n) - engine_calls

    console = Console(width=140)
    table = Table(title=f"per schedule of the {args.workload} workload ({n} schedules, pct, {args.variant}, "
                        f"{args.plain} plain runs before): deterministic counts")
    for column in ("engine function", "bytecodes", "calls", "share of the engine"):
        table.add_column(column, justify="left" if column == "engine function" else "right")
    for (filename, name), value in sorted(engine.items(), key=lambda item: -item[1])[: args.top]:
        where = filename.split(ENGINE_DIR, 1)[1]
        table.add_row(f"{where}:{name}", f"{value / n:.0f}", f"{calls[(filename, name)] / n:.1f}",
                      f"{value / n / engine_total:.1%}")
    table.add_row("engine, all", f"{engine_total:.0f}", f"{engine_calls:.0f}", "100%")
    table.add_row("workload, torch, stdlib (everything else)", f"{other_total:.0f}", f"{other_calls:.0f}",
                  f"engine = {engine_total / other_total:.2f}x this" if other_total else "")
    console.print(table)


if __name__ == "__main__":
    main()
