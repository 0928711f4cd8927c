"""What each operation of the store touches, in the terms of ``racecheck.runtime.access``.

A file is named by its canonical path under the mount root (case-folded as the imitated OS compares names), so a
path and the inode it leads to share one identity for as long as that name holds; an operation through an open
handle names the path its inode has *when it runs* (``Inode.key``, kept up to date by creation and rename; an
unlinked inode keeps the path it had), which ties a write through a handle renamed meanwhile to the operations on
the new name: the rename touches both names, so the two are ordered through it. Every lookup reads the directories
above the path; a name appearing or vanishing also changes its directory's entries.

The kinds per operation, and why (docs/dependency.md has the whole relation):

* ``stat``, ``read``, ``exists``, ``fsync`` read: fsync only changes what a power loss keeps, and a fake
  filesystem that can lose power makes every operation conflict (``FAULTS``). ``stat`` also reads the listing of
  the path (a directory's link count and times follow its entries).
* ``write``, ``truncate``, ``chmod``, ``utime`` write; so does ``open`` with ``O_TRUNC``.
* ``open`` without create or truncate reads the name on POSIX. On Windows it opens (``OPEN``, which conflicts
  with everything): an open handle decides whether a later open, rename or delete of the file succeeds; so does
  ``close`` there, which on POSIX only reads.
* ``open`` with ``O_CREAT``, ``mkdir`` create, ``remove``/``rmdir``/a delete-on-close ``close`` remove, ``rename``
  renames both names: namespace operations, which also change the parent's entries.
* ``listdir`` reads the directory's name and lists its entries.
* With faults on (crash, EIO, disk full, latency), which are drawn by counting operations of every thread and
  keep a journal of all of them, every operation also writes ``fs faults``.
"""

from __future__ import annotations

from functools import lru_cache

from racecheck.fakefs.semantics import WINDOWS, semantics_for
from racecheck.fakefs.store.nodes import Handle, Inode
from racecheck.fakefs.store.paths import display
from racecheck.runtime.access import WRITE, Access, file_access, listing
from racecheck.runtime.steps import Obj, ObjKind

FAULTS = (Access(Obj(ObjKind.FS_STATE, "fs faults"), WRITE),)
# the store's counter of temporary names, shared by every thread
TEMP_NAMES = (Access(Obj(ObjKind.FS_STATE, "fs temp names"), WRITE),)

_windows_key = semantics_for(WINDOWS).key


def path_key(path: str, root: str, win: bool) -> str:
    """The identity of ``path``: textually normalised and, on Windows, with every name below the root compared as
    NTFS compares it (upper case, trailing dots and spaces gone)."""
    norm = display(path)
    if not win or not norm.startswith(root + "/"):
        return norm
    names = norm[len(root) + 1:].split("/")
    return root + "/" + "/".join(_windows_key(name.rstrip(" .") or name) for name in names)


@lru_cache(maxsize=1 << 14)
def path_access(kind: str, path: str, namespace: bool, root: str, win: bool) -> tuple[Access, ...]:
    """An operation of ``kind`` on ``path`` (memoised: every schedule repeats the same few paths)."""
    return file_access(kind, path_key(path, root, win), namespace, root)


@lru_cache(maxsize=1 << 12)
def path_and_listing(kind: str, path: str, root: str, win: bool) -> tuple[Access, ...]:
    """``stat`` and ``listdir``: the name, and the entries below it."""
    key = path_key(path, root, win)
    return file_access(kind, key, False, root) + listing(key)


def handle_key(handle: Handle, root: str, win: bool) -> str:
    """The identity of the file a handle's operation touches now."""
    key = handle.inode.key
    return key if key is not None else path_key(handle.path, root, win)


def rekey(node: Inode, key: str) -> None:
    """``node`` is now named ``key``: so is everything below it (a directory's entries are keyed by the name as the
    OS compares it, which is what a key is made of)."""
    node.key = key
    if node.is_dir:
        for name, (_shown, child) in node.entries.items():
            rekey(child, f"{key}/{name}")


__racecheck_engine__ = True  # the fake is part of the engine: never instrumented itself
