"""Reach benchmark: eight known races in seven released libraries (benchmarks/library_races.py), racecheck and frontrun.

    python benchmarks/bench_libraries.py [--cases a,b] [--schedules N] [--no-frontrun] [--json PATH]

in a venv with racecheck (``pip install -e .``) and ``REQUIREMENTS`` below (the libraries at the pinned versions
and frontrun 0.7.0); the project's own venv does not have them, and this script says so in one line.

For every case, racecheck explores the case's zero-argument test function with
``racecheck.explore(fn, strategy=S, schedules=N, seed=0)`` for S in pct, random and dpor (default options
otherwise), then with line-level points, for today's comparison: pct and dfs (preemption bound 2) with
``preempt=`` the library's modules and the test module (every line executed there a scheduling point). A file
case runs twice: on the real disk (no ``fs=``) and on the fake filesystem (``fs="posix"``). frontrun 0.7 explores
the same scenario (setup / workers / invariant) with its dpor and random strategies, ``max_executions`` /
``max_attempts`` N, ``trace_packages`` the library; it runs under its own launcher (``frontrun python
benchmarks/library_races.py --frontrun CASE ...``) in a subprocess that prints one JSON line, on the real disk.

Each cell: ✔ found, @ the schedule of the first failure (⚠: racecheck failed otherwise, e.g. a replay that
diverged or a deadlock, not counted as found), or ✘ missed after the schedules run ("exh": the search
said its space was done; "end": frontrun's dpor stopped before N by itself, as frontrun leaves ``exhausted``
unset for threads), and seconds (racecheck's include shrinking the failure and naming its racing pair, as
``explore`` does by default; frontrun's include its 10 replays of a counterexample). The last rows count the
cases found per column. Wall-clock figures vary with the machine; nothing is asserted. Exit status 0, or 2 with a
one-line error for bad arguments.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import subprocess
import sys
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

# the libraries at the versions the cases pin (benchmarks/library_races.py), in a venv of their own
REQUIREMENTS = ("frontrun==0.7.0 sendgrid==6.12.5 python-http-client==3.3.7 python-socketio==5.16.3 pybreaker==1.4.1 "
                "urllib3==2.5.0 PyDispatcher==2.0.7 tinydb==4.8.2 keyrings.alt==5.0.2 keyring==25.7.0")

RACECHECK_COLUMNS = (
    ("rc pct", {"strategy": "pct"}),
    ("rc random", {"strategy": "random"}),
    ("rc dpor", {"strategy": "dpor"}),
    ("rc pct+lines", {"strategy": "pct", "lines": True}),
    ("rc dfs≤2+lines", {"strategy": "dfs", "preemption_bound": 2, "lines": True}),
)
FRONTRUN_COLUMNS = (("fr dpor", "dpor"), ("fr random", "random"))


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2
        sys.stderr.write(f"bench_libraries: error: {message}\n")
        raise SystemExit(2)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {value}")
    return value


def run_racecheck(case: Any, module: Any, options: dict, fs: str | None, schedules: int) -> dict:
    import racecheck

    options = dict(options)
    kwargs: dict[str, Any] = {"strategy": options.pop("strategy"), "schedules": schedules, "seed": 0}
    if options.pop("lines", False):
        kwargs["preempt"] = list(case.modules) + [module]
    kwargs.update(options)
    if fs is not None:
        kwargs["fs"] = fs
    started = time.perf_counter()
    try:
        result = racecheck.explore(case.fn, **kwargs)
    except Exception as exc:  # noqa: BLE001 - reported in the table, never hidden
        return {"error": f"{type(exc).__name__}: {exc}", "seconds": time.perf_counter() - started}
    seconds = time.perf_counter() - started
    out: dict[str, Any] = {"found": not result.ok, "schedules": result.schedules, "exhausted": bool(result.exhausted),
                           "seconds": seconds}
    if not result.ok:
        failure = result.failure
        # the race is what the test asserts (or an exception a worker raised); racecheck's own verdicts
        # (deadlock, uncontrolled blocking, step limit, a replay that diverged) are shown but not counted as found
        genuine = failure.kind == "exception" and type(failure.exception).__name__ != "ReplayDivergence"
        out.update(first=failure.schedule_index + 1, kind=failure.kind, message=failure.message[:400], genuine=genuine,
                   preemptions=failure.preemptions, not_a_race=failure.depends_on_schedule is False,
                   token=failure.token)
    return out


def run_frontrun(case_name: str, strategy: str, schedules: int, timeout: float) -> dict:
    launcher = shutil.which("frontrun") or os.path.join(os.path.dirname(sys.executable), "frontrun")
    if not os.path.exists(launcher):
        return {"error": "frontrun not installed (pip install frontrun==0.7.0)"}
    script = os.path.join(HERE, "library_races.py")
    command = [launcher, sys.executable, script, "--frontrun", case_name, "--strategy", strategy,
               "--schedules", str(schedules), "--total-timeout", str(timeout)]
    started = time.perf_counter()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout + 120)
    except subprocess.TimeoutExpired:
        return {"error": f"no answer within {timeout + 120:.0f}s", "seconds": time.perf_counter() - started}
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": f"exit {done.returncode}: {tail[:200]}", "seconds": time.perf_counter() - started}
    out = json.loads(lines[-1])
    if out.get("found"):
        out["first"] = out["schedules"]
    return out


def cell(entry: dict | None) -> str:
    """found: "✔ @first  seconds"; missed: "✘ schedules [exh|end]  seconds"."""
    if entry is None:
        return "-"
    if "error" in entry:
        return f"[yellow]error[/] {entry['error'][:40]}"
    seconds = f"{entry['seconds']:.1f}s"
    if entry.get("found") and not entry.get("genuine", True):
        what = entry["message"].split(":")[0] if entry.get("kind") == "exception" else entry.get("kind")
        return f"[yellow]⚠[/] @{entry['first']} {what} {seconds}"
    if entry.get("found"):
        note = " [yellow]not-a-race?[/]" if entry.get("not_a_race") else ""
        return f"[green]✔[/] @{entry['first']}{note} {seconds}"
    if entry.get("inconclusive"):
        return f"[yellow]?[/] {entry['schedules']} inconclusive {seconds}"
    exhausted = " exh" if entry.get("exhausted") else ""
    if not exhausted and entry.get("requested") and entry["schedules"] < entry["requested"]:
        exhausted = " end"  # frontrun's dpor stopped by itself: it leaves `exhausted` unset for threads
    return f"[red]✘[/] {entry['schedules']}{exhausted} {seconds}"


def main(argv: list[str] | None = None) -> int:
    parser = _Parser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", help="comma-separated case names (default: all eight)")
    parser.add_argument("--schedules", type=_positive, default=500, help="schedules per exploration (default 500)")
    parser.add_argument("--no-frontrun", action="store_true", help="racecheck columns only")
    parser.add_argument("--frontrun-timeout", type=_positive, default=300,
                        help="frontrun's total_timeout per exploration, seconds (default 300)")
    parser.add_argument("--json", metavar="PATH", help="also write every figure to PATH")
    args = parser.parse_args(argv)

    try:
        import library_races
    except ImportError as exc:
        parser.error(f"{exc}: the cases need their libraries, e.g. python3 -m venv /tmp/libvenv && "
                     f"/tmp/libvenv/bin/pip install -e . {REQUIREMENTS}")
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    known = [case.name for case in library_races.CASES]
    if args.cases:
        wanted = [name.strip() for name in args.cases.split(",") if name.strip()]
        unknown = [name for name in wanted if name not in library_races.BY_NAME]
        if unknown or not wanted:
            parser.error(f"unknown case(s) {', '.join(unknown) or '(none given)'}; known: {', '.join(known)}")
        cases = [library_races.BY_NAME[name] for name in wanted]
    else:
        cases = list(library_races.CASES)

    logging.disable(logging.CRITICAL)
    console = Console(width=200)
    import racecheck

    console.print(f"racecheck from {os.path.dirname(racecheck.__file__)}; frontrun "
                  f"{'skipped' if args.no_frontrun else 'under its launcher, in a subprocess per exploration'}")
    legend = Table(title="the cases", show_lines=True)
    for column in ("case", "library", "kind", "race (released source)", "why it matters"):
        legend.add_column(column, overflow="fold")
    for case in cases:
        legend.add_row(case.name, case.library, case.kind, escape(case.race), escape(case.impact))
    console.print(legend)

    total_started = time.perf_counter()
    rows: list[dict] = []
    for case in cases:
        frontrun: dict[str, dict] = {}
        if not args.no_frontrun:
            for column, strategy in FRONTRUN_COLUMNS:
                frontrun[column] = run_frontrun(case.name, strategy, args.schedules, args.frontrun_timeout)
        for fs in ((None, "posix") if case.kind == "file" else (None,)):
            row = {"case": case.name, "kind": case.kind, "fs": fs or ("-" if case.kind == "memory" else "disk"),
                   "cells": {}}
            for column, options in RACECHECK_COLUMNS:
                row["cells"][column] = run_racecheck(case, library_races, options, fs, args.schedules)
            if fs is None:
                row["cells"].update(frontrun)
            rows.append(row)
            console.print(f"[dim]{case.name} ({row['fs']}): done[/]")
    total = time.perf_counter() - total_started

    columns = [name for name, _ in RACECHECK_COLUMNS] + ([] if args.no_frontrun else [n for n, _ in FRONTRUN_COLUMNS])
    table = Table(title=f"✔ found @ schedule of first failure / ✘ missed after n schedules (exh: exhausted, end: dpor "
                        f"stopped by itself); seconds. N={args.schedules}, seed 0", show_lines=False)
    table.add_column("case", no_wrap=True)
    table.add_column("kind", no_wrap=True)
    table.add_column("fs", no_wrap=True)
    for column in columns:
        table.add_column(column, no_wrap=True)
    for row in rows:
        table.add_row(row["case"], row["kind"], row["fs"], *(cell(row["cells"].get(c)) for c in columns))

    def count(column: str, posix: bool) -> str:
        found = 0
        for case in cases:
            fs = "posix" if (posix and case.kind == "file" and column.startswith("rc")) else None
            for row in rows:
                if row["case"] == case.name and (row["fs"] == fs or (fs is None and row["fs"] in ("-", "disk"))):
                    entry = row["cells"].get(column, {})
                    found += bool(entry.get("found") and entry.get("genuine", True))
        return f"{found} of {len(cases)}"

    table.add_section()
    table.add_row("[bold]found, files on disk[/]", "", "", *(count(c, False) for c in columns))
    if any(case.kind == "file" for case in cases):
        table.add_row("[bold]found, files fs=posix[/]", "", "", *(count(c, True) for c in columns))
    console.print(table)
    console.print(f"total {total:.0f}s")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"schedules": args.schedules, "total_seconds": total, "rows": rows}, handle, indent=1,
                      default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
