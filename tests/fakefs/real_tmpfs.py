"""The real directory the differential tests compare the fake with, and how this machine's one lists entries.

Linux's tmpfs has listed directories newest-first for most of its history, in creation order on some 6.x
kernels; the differential tests ask the machine once and give the fake the same ``listing_order``, so they
compare filesystem behaviour, not the kernel version. Anything else (a /dev/shm that is not tmpfs, hash order)
is reported as None."""

from __future__ import annotations

import functools
import os
import shutil
import tempfile


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
