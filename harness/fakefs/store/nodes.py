"""The store's data: inodes (files and directories), open file descriptions, and what ``stat`` reports of them."""

from __future__ import annotations

import os
import stat as stat_mod
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from racecheck.fakefs.store.handle_ops import HandleOps

FD_BASE = 1 << 30  # fake descriptors live far above any real one, so os.close(fd) can tell them apart
DEV = 0x7ACE


class Inode:
    """A file or directory. ``synced`` is the durable content; ``unsynced`` the writes since the last fsync."""

    __slots__ = ("ino", "is_dir", "data", "synced", "unsynced", "entries", "handles", "delete_pending",
                 "pending_from", "mode", "mtime", "ctime", "linked", "key")

    def __init__(self, ino: int, is_dir: bool, now: float, key: str | None = None) -> None:
        self.ino = ino
        # Its identity in the steps' accesses: the canonical path it has (or had when it was last unlinked), kept
        # up to date by the operations that give it a name (``racecheck.fakefs.store.accesses``).
        self.key = key
        self.is_dir = is_dir
        self.data = bytearray()
        self.synced = b""
        self.unsynced: list[tuple] = []
        self.entries: dict[str, tuple[str, Inode]] = {}
        self.handles: list[Handle] = []
        self.delete_pending = False
        self.pending_from: tuple[Inode, str] | None = None
        self.mode = (stat_mod.S_IFDIR | 0o755) if is_dir else (stat_mod.S_IFREG | 0o644)
        self.mtime = now
        self.ctime = now
        self.linked = True


class Handle:
    """One open file description: position and access mode on an inode (which may be unlinked meanwhile).
    ``ops`` is the store's ``HandleOps``, through which every operation on the handle goes; ``generation`` the
    store's at the open (a power loss kills every handle opened before it)."""

    __slots__ = ("ops", "inode", "path", "shown", "fd", "readable", "writable", "append", "pos", "closed",
                 "share_delete", "delete_on_close", "generation", "mode")

    def __init__(self, ops: HandleOps, inode: Inode, path: str, shown: str, fd: int, flags: int, mode: str,
                 share_delete: bool, delete_on_close: bool, generation: int) -> None:
        acc = flags & (os.O_RDONLY | os.O_WRONLY | os.O_RDWR)
        self.ops = ops
        self.inode = inode
        self.path = path
        self.shown = shown
        self.fd = fd
        self.readable = acc in (os.O_RDONLY, os.O_RDWR)
        self.writable = acc in (os.O_WRONLY, os.O_RDWR)
        self.append = bool(flags & os.O_APPEND)
        self.pos = 0
        self.closed = False
        self.share_delete = share_delete
        self.delete_on_close = delete_on_close
        self.generation = generation
        self.mode = mode


def device_inode() -> Inode:
    """What a DOS device name (NUL, CON, ...) stands for: a character device that no directory holds."""
    device = Inode(0, False, 0.0)
    device.mode, device.linked = stat_mod.S_IFCHR | 0o666, False
    return device


def blocked_by_handles(inode: Inode) -> bool:
    """Whether an open handle that does not share delete keeps the file's name in place (Windows)."""
    return any(not h.share_delete for h in inode.handles)


def stat_result(inode: Inode) -> os.stat_result:
    """``os.stat`` of ``inode`` as the store reports it (a directory's size is 4096, a file's link count 0 or 1).
    Reads the inode only: the caller holds the store's lock, or knows that nobody changes the inode meanwhile."""
    size = len(inode.data) if not inode.is_dir else 4096
    nlink = (2 + sum(1 for _, c in inode.entries.values() if c.is_dir)) if inode.is_dir else int(inode.linked)
    times = {"st_atime": inode.mtime, "st_mtime": inode.mtime, "st_ctime": inode.ctime,
             "st_atime_ns": int(inode.mtime * 1e9), "st_mtime_ns": int(inode.mtime * 1e9),
             "st_ctime_ns": int(inode.ctime * 1e9)}
    return os.stat_result((inode.mode, inode.ino, DEV, nlink, 0, 0, size, int(inode.mtime),
                           int(inode.mtime), int(inode.ctime)), times)


__racecheck_engine__ = True  # the fake is part of the engine: never instrumented itself
