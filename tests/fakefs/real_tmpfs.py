"""The real directory the differential tests compare the fake with, how this machine's one lists entries, and
one program run on each side (``on_real``, ``on_fake``).

Linux's tmpfs has listed directories newest-first for most of its history, in creation order on some 6.x
kernels; the differential tests ask the machine once and give the fake the same ``listing_order``, so they
compare filesystem behaviour, not the kernel version. Anything else (a /dev/shm that is not tmpfs, hash order)
is reported as None."""

from __future__ import annotations

import functools
import os
import shutil
import tempfile
from collections.abc import Callable
from typing import Any

import racecheck
import racecheck.fakefs as fakefs


def real_base() -> str | None:
    return "/dev/shm" if os.path.isdir("/dev/shm") else None


@functools.lru_cache(maxsize=1)
def listing_order() -> str | None:
    """"newest-first" or "oldest-first" for how the real base directory lists a fresh directory's entries."""
    root = tempfile.mkdtemp(prefix="racefs-probe-", dir=real_base())
    try:
        for name in ("e", "a", "c", "b"):
            os.mkdir(os.path.join(root, name))
        listed = os.listdir(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    if listed == ["b", "c", "a", "e"]:
        return "newest-first"
    if listed == ["e", "a", "c", "b"]:
        return "oldest-first"
    return None


def on_real(program: Callable[[str], Any], prefix: str) -> Any:
    """``program(root)`` in a fresh directory under the real base, removed afterwards."""
    root = tempfile.mkdtemp(prefix=prefix, dir=real_base())
    try:
        return program(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def on_fake(program: Callable[[str], Any], fs: Any = None) -> Any:
    """``program(root)`` at the fake's root inside one explored schedule, on ``fs`` (default: posix, listing as
    the real base does). The module that defines ``program`` is instrumented, so its os calls reach the fake."""
    got: dict = {}

    def body() -> None:
        got["out"] = program(fakefs.root())

    if fs is None:
        fs = fakefs.FakeFS(listing_order=listing_order() or "native")
    result = racecheck.explore(body, fs=fs, schedules=1, strategy="random", seed=0, shrink_budget=0,
                               instrument=[program.__module__])
    assert result.ok, result.failure
    return got["out"]
