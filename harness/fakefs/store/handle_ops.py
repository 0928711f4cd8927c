"""Handle operations of the store: open(2) and what is done through an open file description (read, write, seek,
truncate, fsync, fstat, close), plus ``truncate`` by path and the current path of a directory descriptor.

Data written through a handle is unsynced until an fsync (see ``durability``); the position is the handle's own,
so seeking is not a scheduling point.
"""

from __future__ import annotations

import errno
import os
import stat as stat_mod
from typing import TYPE_CHECKING

from racecheck.fakefs.semantics import ERROR_ACCESS_DENIED, ERROR_SHARING_VIOLATION, posix_error
from racecheck.fakefs.store.accesses import path_access, path_key
from racecheck.fakefs.store.durability import sync_data
from racecheck.fakefs.store.nodes import Handle, blocked_by_handles, stat_result
from racecheck.fakefs.store.paths import DEVICE, NORM, display
from racecheck.runtime.access import CREATE, OPEN, READ, REMOVE, WRITE

if TYPE_CHECKING:
    from racecheck.fakefs.store.core import StoreCore


class HandleOps:
    """The operations of one store on open file descriptions, over its ``StoreCore`` (the shared state, the
    descriptor table ``fds`` and each operation's protocol with the run: ``enter_handle``, ``leave``,
    ``journal``, ``unlink``). ``sem``, ``paths``, ``root``, ``win`` and ``lock`` are the core's, fixed for the
    store's life; the tree's root and the generation are read from the core, since a power loss changes them.
    Each ``Handle`` it opens names it (``Handle.ops``), so a file object calls it directly."""

    __slots__ = ("core", "sem", "paths", "root", "win", "lock")

    def __init__(self, core: StoreCore) -> None:
        self.core = core
        self.sem, self.paths, self.root, self.win, self.lock = core.sem, core.paths, core.root, core.win, core.lock

    def open(self, path: str, flags: int, *, shown: str | None = None, mode: str = "", api: str = "open",
             share_delete: bool = False, delete_on_close: bool = False, directory_ok: bool = False) -> Handle:
        """open(2). ``directory_ok``: os.open may open a directory read-only (to fsync it); open() may not.
        ``delete_on_close`` is O_TEMPORARY on Windows: DELETE access, so it conflicts with openers that do not
        share delete (and they with it): a second ``open()`` of a live NamedTemporaryFile is a sharing violation."""
        core = self.core
        shown = path if shown is None else shown
        text = f"open {display(path)} {mode or flag_text(flags)}"
        writing = bool(flags & (os.O_WRONLY | os.O_RDWR))
        creating = bool(flags & os.O_CREAT)
        win = self.win
        if creating:
            kind = CREATE
        elif win:
            kind = OPEN
        else:
            kind = WRITE if writing and flags & os.O_TRUNC else READ
        run = core.enter("open", text, path_access(kind, path, creating, self.root, win))
        with self.lock:
            w = self.paths.resolve(core.root_inode, path, shown, api)
            inode = w.inode
            if w.kind == DEVICE:  # a DOS device (NUL, CON, ...): a sink that reads as empty, never a file
                inode = core.new_inode(False)
                inode.linked = False
                inode.mode = stat_mod.S_IFCHR | 0o666
            elif creating and w.kind == NORM and w.slash and not self.win:
                raise self.sem.error(errno.EISDIR, shown, api=api)  # Linux: O_CREAT with a trailing slash
            elif inode is None:
                if not creating:
                    raise self.sem.error(errno.ENOENT, shown, api=api, winerror=2)
                if w.slash:
                    raise self.sem.error(errno.EINVAL, shown, api=api, winerror=123)
                inode = core.new_inode(False, path_key(w.canon, self.root, win))
                w.parent.entries[w.key] = (w.name, inode)
                w.parent.mtime = inode.ctime
                core.journal(("link", w.canon, inode), w.parent)
            else:
                if inode.delete_pending:
                    raise self.sem.error(errno.EACCES, shown, api=api, winerror=ERROR_ACCESS_DENIED)
                if creating and flags & os.O_EXCL:
                    raise self.sem.error(errno.EEXIST, shown, api=api, winerror=80)
                if self.win and inode.is_dir:
                    raise self.sem.error(errno.EACCES, shown, api="open")
                if creating and (inode.is_dir or (w.kind == NORM and w.slash)):
                    raise self.sem.error(errno.EISDIR, shown, api=api)
                if w.slash and not inode.is_dir:
                    raise self.paths.slash_error(shown, api)
                if inode.is_dir and (writing or not directory_ok):
                    raise self.sem.error(errno.EISDIR, shown, api=api)
                if self.win and inode.handles:
                    if (not share_delete and any(h.delete_on_close for h in inode.handles)) or (
                            delete_on_close and blocked_by_handles(inode)):
                        raise self.sem.error(errno.EACCES, shown, api=api, winerror=ERROR_SHARING_VIOLATION)
                if flags & os.O_TRUNC and writing and inode.data:
                    inode.data = bytearray()
                    inode.unsynced.append(("t", 0))
                    inode.mtime = core.now()
            handle = Handle(self, inode, w.canon, shown, core.next_fd(), flags, mode or flag_text(flags),
                            share_delete, delete_on_close, core.generation)
            inode.handles.append(handle)
            core.fds[handle.fd] = handle
        core.leave(run, "open", text)
        return handle

    def truncate_path(self, path: str, length: int, *, shown: str | None = None) -> None:
        """truncate(2) by name: open, truncate and close, each its own operation."""
        handle = self.open(path, os.O_WRONLY, shown=shown, mode="r+", api="os")
        try:
            self.h_truncate(handle, length)
        finally:
            self.h_close(handle)

    def _check(self, handle: Handle) -> None:
        if handle.closed or handle.generation != self.core.generation:
            raise OSError(errno.EBADF, os.strerror(errno.EBADF))

    def h_write(self, handle: Handle, data: bytes) -> int:
        core = self.core
        data = bytes(data)
        text = f"write {handle.path} {len(data)}"
        self._check(handle)
        run = core.enter_handle("write", text, WRITE, handle)
        with self.lock:
            self._check(handle)
            if not handle.writable:
                raise OSError(errno.EBADF, os.strerror(errno.EBADF))
            # write(2) of 0 bytes to a regular file returns 0 "without causing any other effect": no move to the
            # end in append mode, no zero fill up to a position past the end
            if data:
                self._write_locked(handle, data)
        core.leave(run, "write", text)
        return len(data)

    def _write_locked(self, handle: Handle, data: bytes) -> None:
        """``h_write``'s effect, under the store's lock: data at the position (the end in append mode)."""
        core = self.core
        inode = handle.inode
        pos = len(inode.data) if handle.append else handle.pos
        growth = max(0, pos + len(data) - len(inode.data))
        quota = core.faults.quota
        if quota is not None and growth and core.used() + growth > quota:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        if pos > len(inode.data):
            inode.data.extend(b"\0" * (pos - len(inode.data)))
        inode.data[pos:pos + len(data)] = data
        inode.unsynced.append(("w", pos, data))
        inode.mtime = core.now()
        handle.pos = pos + len(data)

    def h_read(self, handle: Handle, size: int = -1) -> bytes:
        core = self.core
        text = f"read {handle.path} {size}"
        self._check(handle)
        run = core.enter_handle("read", text, READ, handle)
        with self.lock:
            self._check(handle)
            if not handle.readable:
                raise OSError(errno.EBADF, os.strerror(errno.EBADF))
            data = handle.inode.data
            end = len(data) if size is None or size < 0 else handle.pos + size
            chunk = bytes(data[handle.pos:end])
            handle.pos += len(chunk)
        core.leave(run, "read", text)
        return chunk

    def h_seek(self, handle: Handle, offset: int, whence: int = 0) -> int:
        """Position is private to the handle: not a scheduling point."""
        self._check(handle)
        with self.lock:
            base = {0: 0, 1: handle.pos, 2: len(handle.inode.data)}[whence]
            if base + offset < 0:
                raise OSError(errno.EINVAL, os.strerror(errno.EINVAL))
            handle.pos = base + offset
            return handle.pos

    def h_truncate(self, handle: Handle, length: int) -> int:
        core = self.core
        text = f"truncate {handle.path} {length}"
        self._check(handle)
        run = core.enter_handle("truncate", text, WRITE, handle)
        with self.lock:
            self._check(handle)
            if not handle.writable:
                raise OSError(errno.EINVAL, os.strerror(errno.EINVAL))
            inode = handle.inode
            if length > len(inode.data):
                inode.data.extend(b"\0" * (length - len(inode.data)))
            else:
                del inode.data[length:]
            inode.unsynced.append(("t", length))
        core.leave(run, "truncate", text)
        return length

    def h_fsync(self, handle: Handle) -> None:
        """File: its data becomes durable. Directory: the journal commits up to its last entry on that dir."""
        core = self.core
        text = f"fsync {handle.path}"
        self._check(handle)
        run = core.enter_handle("fsync", text, READ, handle)
        with self.lock:
            self._check(handle)
            inode = handle.inode
            if inode.is_dir:
                core.durability.commit_directory(inode)
            else:
                sync_data(inode)
        core.leave(run, "fsync", text)

    def h_fstat(self, handle: Handle) -> os.stat_result:
        self._check(handle)
        with self.lock:
            return stat_result(handle.inode)

    def h_close(self, handle: Handle) -> None:
        core = self.core
        if handle.closed:
            return
        if handle.generation != core.generation:  # a handle from before a power loss: nothing to do
            handle.closed = True
            return
        text = f"close {handle.path}"
        if handle.delete_on_close:
            run = core.enter_handle("close", text, REMOVE, handle, namespace=True)
        else:
            run = core.enter_handle("close", text, OPEN if self.win else READ, handle)
        with self.lock:
            if handle.closed:
                return
            handle.closed = True
            core.fds.pop(handle.fd, None)
            inode = handle.inode
            inode.handles.remove(handle)
            if handle.delete_on_close and inode.linked and not inode.delete_pending:
                parent, key, _path = self.paths.parent_of(core.root_inode, inode)
                if parent is not None:
                    inode.delete_pending = True
                    inode.pending_from = (parent, key)
            if inode.delete_pending and not inode.handles and inode.pending_from is not None:
                parent, key = inode.pending_from
                if parent.entries.get(key, (None, None))[1] is inode:
                    core.unlink(parent, key, self.paths.path_of(core.root_inode, parent, key))
                inode.delete_pending = False
        core.leave(run, "close", text)

    def dir_path(self, fd: int) -> str:
        """Where directory descriptor ``fd`` is now: what ``*at()`` calls resolve a relative name against. The
        descriptor holds the directory itself, not its name, so a directory renamed since is followed; one
        removed since has no names left in it (ENOENT), a file's descriptor is ENOTDIR, a closed one EBADF."""
        core = self.core
        with self.lock:
            handle = core.fds.get(fd)
            if handle is None or handle.closed:
                raise posix_error(errno.EBADF)
            node = handle.inode
            if not node.is_dir:
                raise posix_error(errno.ENOTDIR)
            if node is core.root_inode:
                return self.root
            parent, _key, path = self.paths.parent_of(core.root_inode, node)
            if parent is None:
                raise posix_error(errno.ENOENT)
            return path


def flag_text(flags: int) -> str:
    """open(2) flags as the trace shows them: access ("r", "w", "rw"), then c(reat), x(cl), t(runc), a(ppend)."""
    acc = flags & (os.O_RDONLY | os.O_WRONLY | os.O_RDWR)
    text = {os.O_RDONLY: "r", os.O_WRONLY: "w", os.O_RDWR: "rw"}.get(acc, "?")
    for bit, tag in ((os.O_CREAT, "c"), (os.O_EXCL, "x"), (os.O_TRUNC, "t"), (os.O_APPEND, "a")):
        if flags & bit:
            text += tag
    return text


__racecheck_engine__ = True  # the fake is part of the engine: never instrumented itself
