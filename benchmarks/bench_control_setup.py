"""What setting up control costs an exploration, with torch and Lightning loaded (control by default, issue 29).

    python benchmarks/bench_control_setup.py [--repeats 50]

Control by default walks the globals of every loaded module once per exploration (``racecheck.control.scan``
remembers the answer between explorations) and puts the import hooks and builtins in place; ``restore`` undoes it.
Measured here, in milliseconds, as medians of ``--repeats``:

1. the first exploration of a process (the walk of every module), without and with the fake filesystem's swaps;
2. the next ones, with the same modules loaded (the remembered answer, checked);
3. one after a module was imported since the last one (every module looked at, the new one walked);
4. the whole setting every schedule runs in (``Session.controlled``: control by default, the test's module
   instrumented, the Thread patch, carriers closed at the end), around an exploration of no schedule.

Goal: at most 50 ms for an exploration's setup with torch and Lightning loaded (the first one included). Wall-clock
figures: reported, never asserted.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import types

import lightning.pytorch  # noqa: F401 - what a Lightning user's process has loaded
import racecheck
import racecheck.fakefs
import torch  # noqa: F401
from racecheck.control import autocontrol, scan
from racecheck.search.session import Session
from rich.console import Console
from rich.table import Table

GOAL_MS = 50.0


def _timed_ms(fn) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1e3


def _install_and_restore(groups: tuple[str, ...]) -> None:
    autocontrol.install(groups).restore()


def _cold(groups: tuple[str, ...]) -> float:
    scan.SCAN.__init__()  # forget every answer: as the first exploration of a process
    return _timed_ms(lambda: _install_and_restore(groups))


def _after_an_import(groups: tuple[str, ...], count: list[int]) -> float:
    count[0] += 1
    name = f"racecheck_bench_fresh_{count[0]}"
    module = types.ModuleType(name)
    exec("import threading\nimport time\nLOCK = threading.Lock\n", module.__dict__)
    sys.modules[name] = module
    try:
        return _timed_ms(lambda: _install_and_restore(groups))
    finally:
        del sys.modules[name]


def _session_setup() -> None:
    def body() -> None:
        pass

    session = Session(body, racecheck.Config(schedules=1).parts())
    with session.controlled():
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=50)
    args = parser.parse_args()
    if args.repeats < 1:
        parser.error("--repeats must be >= 1")
    racecheck.fakefs.prepare()  # the fake filesystem's swaps registered, as after a first fs= exploration
    med = statistics.median
    rows = []
    for label, groups in (("without fs=", ()), ("with fs= (the fake filesystem's swaps too)", ("fakefs",))):
        cold = med(_cold(groups) for _ in range(max(3, args.repeats // 10)))
        _install_and_restore(groups)
        warm = med(_timed_ms(lambda g=groups: _install_and_restore(g)) for _ in range(args.repeats))
        count = [0]
        changed = med(_after_an_import(groups, count) for _ in range(args.repeats))
        rows.append((label, cold, warm, changed))
    _session_setup()
    whole = med(_timed_ms(_session_setup) for _ in range(args.repeats))
    reached = autocontrol.install()
    modules, swapped = len(sys.modules), reached.swapped_modules
    reached.restore()

    console = Console(width=150)
    table = Table(title=f"control setup + restore per exploration, {modules} modules loaded (torch, Lightning), "
                        f"medians of {args.repeats}")
    for column in ("control by default", "first exploration", "next ones", "after an import", "goal"):
        table.add_column(column, justify="left" if column == "control by default" else "right")
    for label, cold, warm, changed in rows:
        worst = max(cold, warm, changed)
        table.add_row(label, f"{cold:.1f} ms", f"{warm:.2f} ms", f"{changed:.1f} ms",
                      f"<= {GOAL_MS:.0f} ms: {'met' if worst <= GOAL_MS else 'NOT met'}")
    table.add_row("the whole per-exploration setting (Session.controlled)", "", f"{whole:.2f} ms", "", "")
    console.print(table)
    console.print(f"{swapped} modules hold names control by default swaps (of {modules} loaded)")


if __name__ == "__main__":
    main()
