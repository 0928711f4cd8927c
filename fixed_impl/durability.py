"""Durability for ``LockedAsyncCheckpointIO``: making a write the wrapped IO has finished survive a power loss.

The worker calls these around the wrapped IO's own write (guarantee 7 of ``LockedAsyncCheckpointIO``): fsync the
written file (or every file of a directory checkpoint), fsync the directory that names it, and, for
``durability="atomic"``, the hidden temp file next to the target and the cleanup of temps a crash left behind. Only
paths on the local filesystem get these steps; fsync means nothing to other fsspec filesystems.

``os`` is looked up through this module's global at call time (never captured at import), so racecheck can put the
fake filesystem in its place (control by default; ``LockedAsyncCheckpointIO.__racecheck_instrument__`` names this
module too, as a hint).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any, Optional

import fsspec
from fsspec.implementations.local import LocalFileSystem

#: The accepted values of ``LockedAsyncCheckpointIO(durability=...)``.
DURABILITY = ("atomic", "fsync", "none")

# ``durability="atomic"`` temp files: hidden and not ending in ".ckpt", so ``glob("*.ckpt")`` (and Lightning's
# "last" lookup) never matches a partial write. The name is a function of the final name only (no pid, no
# counter), so a schedule's trace is the same in every process; one worker per instance writes one file at a
# time, and ``IN_FLIGHT`` keeps two instances of one process from cleaning each other's temps.
TMP_SUFFIX = ".tmp"

#: Temp paths being written right now by any instance in this process; never cleaned as strays.
IN_FLIGHT: set[str] = set()


def tmp_name(final_name: str) -> str:
    """The temp file name an atomic save of ``final_name`` writes first, in the same directory."""
    return f".{final_name}{TMP_SUFFIX}"


def is_tmp_name(name: str) -> bool:
    """Whether ``name`` is a checkpoint temp file (``tmp_name`` of a ``.ckpt`` name)."""
    return name.startswith(".") and name.endswith(".ckpt" + TMP_SUFFIX)


def local_path(path: Any) -> Optional[str]:
    """The absolute OS path of ``path`` when it is on the local filesystem (where fsync means something)."""
    fs, urlpath = fsspec.core.url_to_fs(os.fspath(path))
    return os.path.abspath(urlpath) if isinstance(fs, LocalFileSystem) else None


def fsync_tree(path: str) -> None:
    """fsync a file, or every file and directory below ``path`` when the wrapped IO wrote a directory."""
    if os.path.isdir(path):
        for root, _dirs, files in os.walk(path):
            for name in files:
                fsync_file(os.path.join(root, name))
            fsync_dir(root)
    else:
        fsync_file(path)


def fsync_file(path: str) -> None:
    """Make the data of the file at ``path`` durable."""
    # Windows' fsync (_commit) needs a handle opened for writing; POSIX accepts a read-only descriptor.
    fd = os.open(path, os.O_RDWR | getattr(os, "O_BINARY", 0) if sys.platform == "win32" else os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(directory: str) -> None:
    """Make the names in ``directory`` (a create, a rename) durable, where the platform can open directories."""
    if not hasattr(os, "O_DIRECTORY"):
        return  # Windows (and the fake fs under Windows semantics) has no directory fsync
    fd = os.open(directory or ".", os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def clean_stray_temps(directory: str, cleaned_dirs: set[str]) -> None:
    """Delete the temp files a crash left in ``directory`` (not the ones being written by another instance of this
    process), once per directory: ``cleaned_dirs`` records the directories already done."""
    if directory in cleaned_dirs:
        return
    cleaned_dirs.add(directory)
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return
    for name in names:
        stray = os.path.join(directory, name)
        if is_tmp_name(name) and stray not in IN_FLIGHT:
            silently(os.remove, stray)


def silently(fn: Callable, *args: Any) -> None:
    """Call ``fn(*args)``, ignoring an ``OSError``: for cleanup whose failure leaves nothing worse behind."""
    try:
        fn(*args)
    except OSError:
        pass
