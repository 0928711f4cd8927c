"""Seconds to the reported failure: racecheck against frontrun 0.7's faster strategy, same programs, same run.

    python benchmarks/bench_real.py [--cases a,b] [--frontrun-timeout 120] [--json PATH]

in a venv with racecheck (``pip install -e .``) and ``bench_libraries.REQUIREMENTS`` (the libraries at the pinned
versions and frontrun 0.7.0), as ``bench_libraries.py``; it says so in one line when they are missing.

What a user waits for is the report, not the find: a failure found, shrunk and given its racing pair. For each
program, racecheck runs with its defaults (``racecheck.explore(fn)``: pct, 1,000 schedules, seed 0, memory watched,
shrinking and the racing pair on), and once more with ``shrink_budget=0, race_budget=0`` for the seconds to the
find alone; frontrun 0.7 runs the same scenario (setup / workers / invariant) with its random strategy (issue 47
measured it as its faster one on these races) and its own defaults otherwise (200 attempts, its 10 replays of a
counterexample), ``trace_packages`` the library, under its launcher in a subprocess that prints one JSON line.

The programs: three races in released libraries with deep call stacks (``library_races.py``: urllib3's connection
count, pybreaker's failure counter, TinyDB's read-modify-write of its JSON file) and one spinning program in the
style of SCTBench's spin-lock tests, without marks: a test-and-set lock built from a plain flag, each thread
busy-waiting on it (``while self.held: pass``) twice, so a schedule that lets a waiter spin runs long.

Columns: racecheck's seconds to the find (and the schedule), to the report (found + shrunk + pair; with the CPU
seconds of the whole process, which another program's load moves less than the wall clock), the steps of the shrunk
run and what the report left undone (``Failure.notes``), then frontrun's seconds to its report (its explanation
and replays included; CPU seconds likewise) and the attempt it found it at. Wall-clock figures vary with the machine;
nothing is asserted. Exit status 0, or 2 with a one-line error for bad arguments.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import subprocess
import sys
import threading
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

LIBRARY_CASES = ("urllib3_num_connections", "pybreaker_calling_counter", "tinydb_lost_insert")
SPIN = "spin_lock"


class SpinLock:
    """Two threads each take a test-and-set lock made of a plain flag twice and bump a counter under it; the check
    and the set are two steps, so both can hold it and an update is lost."""

    def __init__(self) -> None:
        self.held = False
        self.count = 0

    def work(self, _i: int) -> None:
        for _ in range(2):
            while self.held:  # spin: nothing but the flag's read until the holder lets go
                pass
            self.held = True
            seen = self.count
            self.count = seen + 1
            self.held = False

    def problem(self) -> str | None:
        return None if self.count == 4 else f"count is {self.count}, not 4"


def spin_lock() -> None:
    state = SpinLock()
    threads = [threading.Thread(target=state.work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    problem = state.problem()
    assert problem is None, problem


def _case(name: str) -> Any:
    """The ``library_races.Case`` of a name, or one made for the spinning program."""
    import library_races

    if name != SPIN:
        return library_races.BY_NAME[name]
    return library_races.Case(SPIN, "-", spin_lock, "memory", "test-and-set on a plain flag, busy-waited on",
                              "two holders of the lock: a lost update", SpinLock, ())


def run_racecheck(name: str) -> dict:
    import racecheck

    case = _case(name)
    started = time.perf_counter()
    found = racecheck.explore(case.fn, shrink_budget=0, race_budget=0)
    find_seconds = time.perf_counter() - started
    started, cpu = time.perf_counter(), time.process_time()
    result = racecheck.explore(case.fn)
    seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu
    failure = result.failure
    out: dict[str, Any] = {"find_seconds": find_seconds, "found_at": None if found.ok else found.failure.schedule_index,
                           "seconds": seconds, "cpu_seconds": cpu_seconds, "found": failure is not None}
    if failure is not None:
        out.update(schedule=failure.schedule_index, steps=failure.steps, original_steps=failure.original_steps,
                   message=failure.message.splitlines()[0][:120], pair=str(failure.race) if failure.race else "",
                   notes=list(failure.notes))
    return out


def run_frontrun(name: str, timeout: float) -> dict:
    launcher = shutil.which("frontrun") or os.path.join(os.path.dirname(sys.executable), "frontrun")
    if not os.path.exists(launcher):
        return {"error": "frontrun not installed (pip install frontrun==0.7.0)"}
    command = [launcher, sys.executable, os.path.abspath(__file__), "--frontrun", name, "--frontrun-timeout",
               str(timeout)]
    started = time.perf_counter()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout + 120)
    except subprocess.TimeoutExpired:
        return {"error": f"no answer within {timeout + 120:.0f}s", "seconds": time.perf_counter() - started}
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": f"exit {done.returncode}: {tail[:200]}", "seconds": time.perf_counter() - started}
    return json.loads(lines[-1])


def frontrun_side(name: str, timeout: float) -> dict:
    """Under frontrun's launcher: its random strategy on the case, its defaults otherwise (200 attempts)."""
    import library_races

    logging.disable(logging.CRITICAL)
    return library_races.frontrun_explore(_case(name), "random", 200, seed=0, total_timeout=timeout)


def _row(name: str, rc: dict, fr: dict) -> list[str]:
    if "error" in rc:
        mine = ["error", rc["error"][:40], "", ""]
    elif rc["found"]:
        undone = "; ".join(note.split(":")[0].split(" (")[0] for note in rc["notes"]) or "-"
        mine = [f"{rc['find_seconds']:.2f}s @{rc['found_at']}",
                f"{rc['seconds']:.2f}s ({rc['cpu_seconds']:.2f}s CPU) @{rc['schedule']}",
                f"{rc['original_steps']} -> {rc['steps']}", ("pair named" if rc["pair"] else "no pair") + f"; {undone}"]
    else:
        mine = [f"missed {rc['find_seconds']:.2f}s", f"{rc['seconds']:.2f}s", "", ""]
    if "error" in fr:
        theirs = ["error " + fr["error"][:40], ""]
    else:
        cpu = f" ({fr['cpu_seconds']:.2f}s CPU)" if "cpu_seconds" in fr else ""
        theirs = [f"{fr['seconds']:.2f}s{cpu}", f"@{fr['schedules']}" if fr.get("found") else
                  f"missed ({fr['schedules']})"]
    return [name, *mine, *theirs]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", help=f"comma-separated (default: {', '.join((*LIBRARY_CASES, SPIN))})")
    parser.add_argument("--frontrun-timeout", type=float, default=120.0, help="frontrun's total_timeout, seconds")
    parser.add_argument("--no-frontrun", action="store_true", help="racecheck's columns only")
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    parser.add_argument("--frontrun", metavar="CASE", help=argparse.SUPPRESS)  # the subprocess under the launcher
    args = parser.parse_args(argv)
    names = args.cases.split(",") if args.cases else [*LIBRARY_CASES, SPIN]
    try:
        import library_races
    except ImportError as exc:
        print(f"bench_real: needs the libraries of bench_libraries.REQUIREMENTS in this venv ({exc})", file=sys.stderr)
        return 2
    unknown = [name for name in names if name != SPIN and name not in library_races.BY_NAME]
    if unknown:
        parser.error(f"unknown case {unknown[0]!r}")
    if args.frontrun:
        print(json.dumps(frontrun_side(args.frontrun, args.frontrun_timeout)))
        return 0
    rows, figures = [], {}
    for name in names:
        rc = run_racecheck(name)
        fr = {"error": "skipped"} if args.no_frontrun else run_frontrun(name, args.frontrun_timeout)
        figures[name] = {"racecheck": rc, "frontrun": fr}
        rows.append(_row(name, rc, fr))
        print(f"{name}: done", file=sys.stderr, flush=True)
    header = ["program", "rc find", "rc report", "rc steps", "rc report says", "frontrun random", "fr found at"]
    widths = [max(len(str(row[k])) for row in [header, *rows]) for k in range(len(header))]
    for row in [header, *rows]:
        print(" | ".join(str(cell).ljust(width) for cell, width in zip(row, widths, strict=True)))
    for name in names:
        rc = figures[name]["racecheck"]
        if rc.get("pair") or rc.get("notes"):
            print(f"{name}: {rc.get('pair') or ''} {' '.join(rc.get('notes', []))}".rstrip())
    if args.json:
        with open(args.json, "w") as out:
            json.dump(figures, out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
