"""Check the SCTBench ports with what racecheck offers today: each bug is there, each correct twin is correct.

    python tests/sctbench/check_bugs.py [NAME ...] [--full] [--plain-runs N] [--plain-seconds S] [--no-plain]

Every program runs under ``racecheck.explore(fn, strategy="dfs", preemption_bound=None, preempt="lines",
schedules=200000, max_steps=20000)``: every line of ``programs.py`` and every store to shared state is a scheduling
point and the search has no preemption bound, so it enumerates the program's line-level interleavings. A buggy
program passes the check when that search fails it with the expected kind of failure (an ``AssertionError`` for
"assertion", another exception for "exception", a deadlock); a correct twin passes when the search runs its whole
space without a failure (``result.ok and result.exhausted``), which proves it at line granularity.

Columns: ``found`` (not result.ok), ``exh`` (result.exhausted), ``schedules``, ``secs``, ``kind`` (the failure's
kind, "assertion" for an AssertionError), ``pre`` (the preemptions of the shrunk failing schedule: the fewest the
bug needs, within the shrinker's budget), ``not-race`` (racecheck's verdict that the program fails under every
schedule it tried), ``plain`` (failing runs among plain runs, below) and ``check``.

``--full`` also runs every buggy program's whole space (all failures counted, none shrunk) and prints its size, to
show that each one is exhaustible too: ``space`` (schedules, failing ones, seconds).

The plain cross-check (``plain_hits``) runs each buggy program without racecheck, on real threads, with
``sys.setswitchinterval(1e-6)``, until ``--plain-runs`` runs or ``--plain-seconds`` seconds, and counts the runs that
fail: an exception in any thread, or a run still blocked after a few seconds (then the count stops there, as the
blocked threads stay behind). It is a report, not a check: most of these bugs never show in plain runs.

Exit status 0 when every check passes, 1 otherwise.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path

import racecheck

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sctbench.programs import PROGRAMS, Program, failure_kind  # noqa: E402

EXPLORE = dict(strategy="dfs", preemption_bound=None, preempt="lines", schedules=200000, max_steps=20000)
HANG_SECONDS = 3.0  # a plain run still going after this long is counted as blocked (deadlocked)


def check_program(program: Program) -> dict:
    started = time.perf_counter()
    result = racecheck.explore(program.fn, **EXPLORE)
    seconds = time.perf_counter() - started
    kind = failure_kind(result)
    if program.buggy:
        passed = not result.ok and kind == program.bug
    else:
        passed = result.ok and result.exhausted
    failure = result.failure
    return {
        "found": not result.ok,
        "exhausted": result.exhausted,
        "schedules": result.schedules,
        "seconds": seconds,
        "kind": kind,
        "preemptions": failure.preemptions if failure is not None else None,
        "not_a_race": failure.not_a_race if failure is not None else None,
        "passed": passed,
        "failure": failure,
    }


def full_space(program: Program) -> tuple[int, int, bool, float]:
    """Explore the whole space of a buggy program: every failing schedule counted, none shrunk or judged."""
    started = time.perf_counter()
    result = racecheck.explore(
        program.fn, **EXPLORE, max_failures=10**6, shrink_budget=0, race_budget=0
    )
    failing = sum(f.occurrences for f in result.failures)
    return result.schedules, failing, result.exhausted, time.perf_counter() - started


def plain_hits(fn, runs: int, seconds: float = 3.0) -> tuple[int, int, bool]:
    """Run ``fn`` on real threads without racecheck, up to ``runs`` times or ``seconds`` seconds, with a tiny
    switch interval; return (failing runs, runs, whether the last one was left blocked).

    A run fails when ``fn`` or any thread it starts raises, or when it is still blocked after HANG_SECONDS (a
    deadlock: its threads stay blocked, daemonic, so counting stops there)."""
    raised: list[BaseException] = []
    old_interval, old_hook = sys.getswitchinterval(), threading.excepthook
    sys.setswitchinterval(1e-6)
    threading.excepthook = lambda args: raised.append(args.exc_value)
    hits = done = 0
    blocked = False
    deadline = time.monotonic() + seconds
    try:
        while done < runs and time.monotonic() < deadline:
            raised.clear()

            def body():
                try:
                    fn()
                except BaseException as exc:  # noqa: BLE001 (any failure of the program counts)
                    raised.append(exc)

            runner = threading.Thread(target=body, daemon=True)  # threads it starts are daemonic too
            runner.start()
            runner.join(HANG_SECONDS)
            done += 1
            if runner.is_alive():
                hits += 1
                blocked = True
                break
            hits += bool(raised)
    finally:
        sys.setswitchinterval(old_interval)
        threading.excepthook = old_hook
    return hits, done, blocked


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="programs to check (default: all)")
    parser.add_argument("--full", action="store_true", help="also run every buggy program's whole space")
    parser.add_argument("--plain-runs", type=int, default=1000, help="plain runs per buggy program (default 1000)")
    parser.add_argument("--plain-seconds", type=float, default=3.0, help="time limit of the plain runs per program")
    parser.add_argument("--no-plain", action="store_true", help="skip the plain cross-check")
    args = parser.parse_args(argv)

    known = {p.name: p for p in PROGRAMS}
    unknown = [name for name in args.names if name not in known]
    if unknown:
        parser.error(f"unknown program(s): {', '.join(unknown)}; known: {', '.join(known)}")
    programs = [known[name] for name in args.names] if args.names else PROGRAMS

    began = time.perf_counter()
    header = (
        f"{'program':26} {'buggy':5} {'expect':9} {'found':5} {'exh':5} {'schedules':>9} {'secs':>7} "
        f"{'kind':10} {'pre':>3} {'not-race':8} {'plain':>10} {'check':5}"
    )
    rows = []
    print(header)
    print("-" * len(header))
    for program in programs:
        row = check_program(program)
        rows.append((program, row))
        print(_line(program, row, plain="..."), flush=True)

    if not args.no_plain:
        print("\nplain runs (no racecheck, switch interval 1e-6):")
        for program, row in rows:
            if program.buggy:
                hits, done, blocked = plain_hits(program.fn, args.plain_runs, args.plain_seconds)
                row["plain"] = f"{hits}/{done}" + ("*" if blocked else "")
                print(f"  {program.name:26} {row['plain']:>10}", flush=True)

    if args.full:
        print("\nwhole spaces of the buggy programs (every failing schedule counted, none shrunk):")
        for program, row in rows:
            if program.buggy:
                schedules, failing, exhausted, seconds = full_space(program)
                row["space"] = (schedules, failing, exhausted, seconds)
                print(
                    f"  {program.name:26} {schedules:>7} schedules, {failing:>7} failing, "
                    f"{'exhausted' if exhausted else 'NOT exhausted'}, {seconds:6.1f} s",
                    flush=True,
                )

    total = time.perf_counter() - began
    print("\n" + header)
    print("-" * len(header))
    for program, row in rows:
        print(_line(program, row, plain=row.get("plain", "-")))
    failed = [program.name for program, row in rows if not row["passed"]]
    buggy = sum(p.buggy for p, _ in rows)
    found = sum(p.buggy and row["passed"] for p, row in rows)
    twins = sum(not p.buggy for p, _ in rows)
    proved = sum(not p.buggy and row["passed"] for p, row in rows)
    print(
        f"\n{found}/{buggy} bugs found, {proved}/{twins} correct twins proved (exhausted, no failure); "
        f"{total:.1f} s in all"
    )
    if failed:
        print(f"FAILED: {', '.join(failed)}")
        for program, row in rows:
            if not row["passed"] and row["failure"] is not None:
                print(f"\n{program.name}:\n{row['failure']}")
    return 1 if failed else 0


def _line(program: Program, row: dict, plain: str) -> str:
    pre = "" if row["preemptions"] is None else str(row["preemptions"])
    not_race = {None: "", True: "yes", False: "no"}[row["not_a_race"]]
    return (
        f"{program.name:26} {'yes' if program.buggy else 'no':5} {program.bug or 'ok':9} "
        f"{'yes' if row['found'] else 'no':5} {'yes' if row['exhausted'] else 'no':5} {row['schedules']:>9} "
        f"{row['seconds']:>7.1f} {row['kind'] or '-':10} {pre:>3} {not_race:8} {plain:>10} "
        f"{'PASS' if row['passed'] else 'FAIL':5}"
    )


if __name__ == "__main__":
    sys.exit(main())
