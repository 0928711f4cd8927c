"""A thread-only twin of DCP's two-daemon race (``tests/dcp``) for sampled memory watching's busy-wait rule.

``two_daemons``: a worker thread starts the registry's daemon (check, start a helper, wait for it, assign), and the
main thread, after some preparation, does the same: two daemons when the main thread checks while the worker waits
for its helper. The preparation is what ``torch.distributed``'s helpers are in DCP: code that touches only its own
objects (left unwatched in sampled runs) around one read of shared state per call (``mode_of``: a field the worker
writes), so the main thread reads ``registry.mode`` many times in a row with unwatched work between. A sampled run
sees only those reads: one read made again at decision after decision, which is what a busy-wait looks like."""

from __future__ import annotations

import threading


class Registry:
    def __init__(self) -> None:
        self.daemon: threading.Thread | None = None
        self.made = 0
        self.mode = "idle"


class Scratch:
    def __init__(self) -> None:
        self.n = 0


def bump(scratch: Scratch) -> None:
    scratch.n = scratch.n + 1


def mode_of(registry: Registry) -> str:
    return registry.mode  # shared: the worker writes it


def option(registry: Registry, scratch: Scratch) -> str:
    for _ in range(3):
        bump(scratch)
    return mode_of(registry)


def prepare(registry: Registry, calls: int) -> int:
    scratch = Scratch()
    for _ in range(calls):
        option(registry, scratch)
    return scratch.n


def start_daemon(registry: Registry) -> None:
    if registry.daemon is None:
        ready = threading.Event()
        daemon = threading.Thread(target=ready.set)
        daemon.start()
        ready.wait()
        registry.made += 1
        registry.daemon = daemon
        daemon.join()


def worker(registry: Registry) -> None:
    registry.mode = "saving"
    start_daemon(registry)


def two_daemons() -> None:
    registry = Registry()
    thread = threading.Thread(target=worker, args=(registry,))
    thread.start()
    prepare(registry, 60)
    start_daemon(registry)
    thread.join()
    assert registry.made == 1, f"{registry.made} daemons"


def work(rounds: int = 150) -> int:
    """Work on an object only the calling thread sees: left unwatched in sampled runs."""
    scratch = Scratch()
    for _ in range(rounds):
        bump(scratch)
    return scratch.n


class Flag:
    def __init__(self) -> None:
        self.ready = False
        self.data = 0


def spin_handoff() -> None:
    """Correct: after its private work the reader busy-waits in watched code for the writer's flag, then reads what
    the writer published. A sampled run must still take the spin for one (the learning run never saw the flag read
    again after unwatched code), or it spins to the step limit."""
    flag = Flag()

    def writer() -> None:
        work()
        flag.data = 42
        flag.ready = True

    def reader() -> None:
        work()
        while not flag.ready:
            pass
        assert flag.data == 42

    threads = [threading.Thread(target=reader), threading.Thread(target=writer)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
