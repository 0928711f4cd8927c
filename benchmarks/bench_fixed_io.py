"""How long the training loop is blocked per checkpoint save, and what queued snapshots cost in memory.

    python benchmarks/bench_fixed_io.py [--reps-large 5] [--reps-small 30] [--dir /some/tmp]

Compares, in the same process and interleaved round by round (so drift hits all three alike):

* ``sync``   - ``TorchCheckpointIO.save_checkpoint`` (the loop waits for serialisation and the write),
* ``stock``  - Lightning's ``AsyncCheckpointIO`` (clone on the caller, write in a thread),
* ``locked`` - ``racecheck.fixed_impl.LockedAsyncCheckpointIO()`` as a user gets it: slot check, snapshot, enqueue
  on the caller; on the worker the wrapped ``TorchCheckpointIO`` writes a hidden temp file (delegation), which is
  fsynced, renamed into place and the directory fsynced (``durability="atomic"``, the default),
* ``fsync``  - the same with ``durability="fsync"`` (the inner IO writes the final path; file + dir fsync after).

"Blocked" is the wall time of the ``save_checkpoint`` call alone; the queue is drained between saves, i.e. the
steady state where checkpoints are rarer than writes take. "Done" is save call + drain: when the checkpoint is
on disk (and durable for the locked variants), which shows what durability costs off the training thread.
Goal stated for the fixed plugin: blocked time <= stock + 5 %, and >= 5x less than sync at 100 MB.

Memory: process RSS (``/proc/self/status`` VmRSS; tracemalloc does not see torch storages) while
``max_pending`` saves are queued behind a blocked writer, minus RSS before; plus exact snapshot bytes counted
from tensor ``nbytes``. This is a benchmark, not a test: it asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import threading
import time

import torch
from lightning.fabric.plugins import TorchCheckpointIO
from lightning.pytorch.plugins.io.async_plugin import AsyncCheckpointIO
from racecheck.fixed_impl import LockedAsyncCheckpointIO

MB = 1024 * 1024


def make_checkpoint(nbytes: int) -> dict:
    n = nbytes // 4
    return {
        "state_dict": {"layer.weight": torch.randn(n - 1024), "layer.bias": torch.randn(1024)},
        "epoch": 0,
        "global_step": 0,
    }


def rss_bytes() -> int:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return -1


def barrier(name: str, io) -> None:
    if name in ("locked", "fsync"):
        io.wait()
    elif name == "stock":
        io.teardown()  # the only barrier stock offers; it recreates its executor on the next save


def bench_blocking(size: int, reps: int, directory: str) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Per implementation: time the caller was blocked per save, and time until the save was on disk."""
    ckpt = make_checkpoint(size)
    ios = {
        "sync": TorchCheckpointIO(),
        "stock": AsyncCheckpointIO(TorchCheckpointIO()),
        "locked": LockedAsyncCheckpointIO(),
        "fsync": LockedAsyncCheckpointIO(durability="fsync"),
    }
    for io in ios.values():
        if getattr(io, "checkpoint_io", 1) is None:
            io.checkpoint_io = TorchCheckpointIO()  # what the Trainer's strategy plugs in
    times: dict[str, list[float]] = {name: [] for name in ios}
    done: dict[str, list[float]] = {name: [] for name in ios}
    for rep in range(reps + 1):  # round 0 is a warm-up, not recorded
        for name, io in ios.items():
            path = os.path.join(directory, f"{name}-{size}-{rep % 2}.ckpt")
            t0 = time.perf_counter()
            io.save_checkpoint(ckpt, path)
            elapsed = time.perf_counter() - t0
            barrier(name, io)
            total = time.perf_counter() - t0
            if rep:
                times[name].append(elapsed)
                done[name].append(total)
    for io in ios.values():
        io.teardown()
    return times, done


class _BlockedIO(TorchCheckpointIO):
    """Holds the writer so that saves stay queued while memory is measured."""

    def __init__(self) -> None:
        super().__init__()
        self.go = threading.Event()

    def save_checkpoint(self, checkpoint, path, storage_options=None):
        self.go.wait()
        super().save_checkpoint(checkpoint, path, storage_options)


def bench_memory(size: int, queued: int, directory: str) -> dict[str, tuple[int, int]]:
    """Extra RSS and snapshot bytes with ``queued`` saves pending behind a blocked writer."""
    out = {}
    ckpt = make_checkpoint(size)
    for name, n in ((f"stock x{queued}", queued), (f"stock x{2 * queued}", 2 * queued), ("locked", queued)):
        inner = _BlockedIO()
        io = AsyncCheckpointIO(inner) if name.startswith("stock") else LockedAsyncCheckpointIO(inner, queued)
        before = rss_bytes()
        for i in range(n):
            io.save_checkpoint(ckpt, os.path.join(directory, f"mem-{name}-{i}.ckpt"))
        extra = rss_bytes() - before
        snapshot_bytes = n * sum(t.nbytes for t in ckpt["state_dict"].values())
        inner.go.set()
        io.teardown()
        out[name] = (extra, snapshot_bytes)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps-large", type=int, default=5)
    parser.add_argument("--reps-small", type=int, default=30)
    parser.add_argument("--max-pending", type=int, default=2)
    parser.add_argument("--dir", default=None, help="where to write (default: a temp dir)")
    args = parser.parse_args()
    torch.set_num_threads(max(1, (os.cpu_count() or 2) // 2))

    with tempfile.TemporaryDirectory(dir=args.dir) as directory:
        print(f"torch {torch.__version__}, {os.cpu_count()} CPUs, writing to {directory}")
        print()
        header = (
            f"{'size':>7} {'impl':>7} {'blocked median ms':>18} {'min ms':>8} {'vs stock':>9} {'vs sync':>9}"
            f" {'done median ms':>15}"
        )
        print(header)
        print("-" * len(header))
        for size, reps in ((100 * MB, args.reps_large), (1 * MB, args.reps_small)):
            times, done = bench_blocking(size, reps, directory)
            med = {name: statistics.median(ts) for name, ts in times.items()}
            for name, ts in times.items():
                print(
                    f"{size // MB:>5}MB {name:>7} {med[name] * 1e3:>18.2f} {min(ts) * 1e3:>8.2f}"
                    f" {med[name] / med['stock']:>8.2f}x {med['sync'] / med[name]:>8.1f}x"
                    f" {statistics.median(done[name]) * 1e3:>15.2f}"
                )
            over = med["locked"] / med["stock"] - 1
            print(
                f"{'':>7} locked (delegating default) vs stock: {over:+.1%} (goal <= +5%);"
                f" sync / locked: {med['sync'] / med['locked']:.1f}x (goal >= 5x at 100 MB)"
            )
            print()
        print(f"memory with {args.max_pending} saves queued behind a blocked writer (100 MB checkpoint)")
        header = f"{'impl (saves queued)':>20} {'extra RSS MB':>13} {'snapshot MB':>12}"
        print(header)
        print("-" * len(header))
        for name, (extra, snap) in bench_memory(100 * MB, args.max_pending, directory).items():
            print(f"{name:>20} {extra / MB:>13.1f} {snap / MB:>12.1f}")
        print(
            "stock keeps queueing clones without limit (each save adds one checkpoint of memory, on the"
            " tensors' device);\nlocked blocks the caller once max_pending snapshots exist (on CPU by default);"
            " with reuse_buffers\nit also keeps up to max_pending snapshots' storage between saves, freed at"
            " teardown."
        )


if __name__ == "__main__":
    main()
