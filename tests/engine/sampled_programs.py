"""Programs for sampled memory watching (``racecheck.control.memory_sampling``): each does most of its memory work
on objects only one thread touches (``work``), which sampled runs leave unwatched, beside a little shared state.

``SEEN`` collects, per run, whether it was sampled and whether ``bump`` ran its own code in it."""

from __future__ import annotations

import threading

import racecheck

SEEN: list[tuple[bool, bool]] = []


class Scratch:
    def __init__(self) -> None:
        self.n = 0


def bump(scratch: Scratch) -> None:
    scratch.n = scratch.n + 1


def work(rounds: int = 150) -> int:
    scratch = Scratch()
    for _ in range(rounds):
        bump(scratch)
    return scratch.n


BUMP_CODE = bump.__code__


def _note() -> None:
    run = racecheck.runtime.current_run()
    SEEN.append((run.memory_steps.sampled, bump.__code__ is BUMP_CODE))


class Lazy:
    """A check-then-act lazy init: two threads can both find no value and both make one."""

    def __init__(self) -> None:
        self.value: object | None = None
        self.made = 0

    def get(self) -> object:
        if self.value is None:
            self.made += 1
            self.value = object()
        return self.value


def lazy_race() -> None:
    """Each thread works privately, then takes the lazy value: made twice in some interleavings."""
    _note()
    lazy = Lazy()

    def worker() -> None:
        work()
        lazy.get()

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert lazy.made == 1, f"made {lazy.made} values"


def small_space() -> None:
    """Private work while only the root runs (no decision), then two threads each add once under no lock: a small
    space, every schedule of which passes."""
    work(300)
    totals = {"n": 0}

    def add() -> None:
        totals["n"] = totals["n"] + 1

    threads = [threading.Thread(target=add) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert totals["n"] in (1, 2)
