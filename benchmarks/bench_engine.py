"""Engine benchmark: the cost of control, measured against uncontrolled runs of the same code in the same process.

    python benchmarks/bench_engine.py [--rounds 2000] [--schedules 300]

1. Baton handoff floor: two threads ping-pong through a pair of semaphores, controlled vs plain threads.
2. Schedules per second on the micro workload (stock Lightning AsyncCheckpointIO(TorchCheckpointIO()):
   save(a); save(b); remove(a); teardown() on a real temp dir), controlled (PCT) vs the plain loop.
Wall-clock figures; they are reported, never asserted.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import threading
import time

import racecheck
from rich.console import Console
from rich.table import Table


def ping_pong(rounds: int) -> None:
    ping, pong = threading.Semaphore(0), threading.Semaphore(0)

    def player(mine, theirs, serve):
        for _ in range(rounds):
            if serve:
                theirs.release()
                mine.acquire()
            else:
                mine.acquire()
                theirs.release()

    a = threading.Thread(target=player, args=(ping, pong, True))
    b = threading.Thread(target=player, args=(pong, ping, False))
    a.start()
    b.start()
    a.join()
    b.join()


def micro_workload(directory: str) -> None:
    import torch
    from lightning.pytorch.plugins.io.async_plugin import AsyncCheckpointIO
    from lightning.pytorch.plugins.io.torch_plugin import TorchCheckpointIO

    io = AsyncCheckpointIO(TorchCheckpointIO())
    a, b = os.path.join(directory, "a.ckpt"), os.path.join(directory, "b.ckpt")
    io.save_checkpoint({"w": torch.zeros(4)}, a)
    io.save_checkpoint({"w": torch.ones(4)}, b)
    io.remove_checkpoint(a)
    try:
        io.teardown()
    except FileNotFoundError:
        pass  # the upstream race itself (remove between fsspec's move and chmod); the benchmark only times runs
    for name in os.listdir(directory):
        os.remove(os.path.join(directory, name))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2000)
    parser.add_argument("--schedules", type=int, default=300)
    args = parser.parse_args()
    console = Console()
    table = Table(title="racecheck engine benchmark (same process, same run)")
    for column in ("workload", "uncontrolled", "controlled", "controlled / uncontrolled"):
        table.add_column(column, justify="right" if column != "workload" else "left")

    start = time.perf_counter()
    ping_pong(args.rounds)
    plain = time.perf_counter() - start
    start = time.perf_counter()
    result = racecheck.explore(lambda: ping_pong(args.rounds), strategy="random", schedules=1, max_steps=10**7)
    controlled = time.perf_counter() - start
    assert result.ok, result.failure
    handoffs = 2 * args.rounds
    table.add_row(
        f"ping-pong handoff ({handoffs} handoffs)",
        f"{plain / handoffs * 1e6:.1f} us/handoff",
        f"{controlled / handoffs * 1e6:.1f} us/handoff",
        f"{plain / controlled:.2f}x throughput",
    )

    directory = tempfile.mkdtemp(prefix="racecheck-bench-")
    try:
        micro_workload(directory)  # warm-up: imports, torch serialization caches
        start = time.perf_counter()
        for _ in range(args.schedules):
            micro_workload(directory)
        plain = args.schedules / (time.perf_counter() - start)
        start = time.perf_counter()
        result = racecheck.explore(
            lambda: micro_workload(directory),
            strategy="pct",
            schedules=args.schedules,
            instrument=["lightning.pytorch.plugins.io.async_plugin"],
            shrink_budget=0,
        )
        controlled = result.schedules / (time.perf_counter() - start)
        table.add_row(
            f"stock AsyncCheckpointIO micro workload ({result.schedules} schedules, real temp dir)",
            f"{plain:.0f} runs/s",
            f"{controlled:.0f} schedules/s",
            f"{controlled / plain:.0%}",
        )
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    console.print(table)
    console.print("goal: controlled >= 50% of uncontrolled throughput on the micro workload")


if __name__ == "__main__":
    main()
