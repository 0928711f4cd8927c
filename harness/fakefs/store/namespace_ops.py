"""Namespace operations of the store: remove, rename, mkdir, rmdir, listdir, stat, chmod, utime.

Each is one scheduling point before its effect, then the checks of the imitated OS in its order, then the effect
(journaled for the power-loss model) under the store's lock.
"""

from __future__ import annotations

import errno
import os
import stat as stat_mod
from typing import TYPE_CHECKING

from racecheck.fakefs.semantics import ERROR_ACCESS_DENIED, ERROR_DIRECTORY, ERROR_SHARING_VIOLATION
from racecheck.fakefs.store.accesses import path_access, path_and_listing, path_key, rekey
from racecheck.fakefs.store.nodes import Inode, blocked_by_handles, device_inode, stat_result
from racecheck.fakefs.store.paths import DEVICE, DOT, DOTDOT, NORM, ROOT, display
from racecheck.runtime.access import CREATE, READ, REMOVE, RENAME, WRITE

if TYPE_CHECKING:
    from racecheck.fakefs.store.core import StoreCore


class NamespaceOps:
    """The namespace operations of one store, over its ``StoreCore`` (the shared state and each operation's
    protocol with the run: ``enter``, ``narrow``, ``leave``, ``journal``, ``unlink``). ``sem``, ``paths``,
    ``root``, ``win`` and ``lock`` are the core's, fixed for the store's life; the tree's root is read from the
    core at each operation, since a power loss replaces it."""

    __slots__ = ("core", "sem", "paths", "root", "win", "lock")

    def __init__(self, core: StoreCore) -> None:
        self.core = core
        self.sem, self.paths, self.root, self.win, self.lock = core.sem, core.paths, core.root, core.win, core.lock

    def remove(self, path: str, *, shown: str | None = None) -> None:
        """unlink(2) / DeleteFileW. Windows generation modelled: 10 1903+ (NTFS POSIX delete): a file whose only
        handles share delete loses its name at once; any other open handle is a sharing violation (32)."""
        core = self.core
        shown = path if shown is None else shown
        text = f"remove {display(path)}"
        run = core.enter("remove", text, path_access(REMOVE, path, True, self.root, self.win))
        with self.lock:
            w = self.paths.resolve(core.root_inode, path, shown)
            inode = w.inode
            if w.kind != NORM:
                raise self.sem.error(errno.EACCES if w.kind == DEVICE else errno.EISDIR, shown,
                                     winerror=ERROR_ACCESS_DENIED)
            if inode is None:
                core.narrow(run, path_access(READ, path, False, self.root, self.win))  # read: not there
                raise self.sem.error(errno.ENOENT, shown, winerror=2)
            if inode.is_dir:
                raise self.sem.error(errno.EISDIR, shown, winerror=ERROR_ACCESS_DENIED)
            if w.slash:
                raise self.paths.slash_error(shown)
            if self.win:
                if inode.delete_pending:
                    raise self.sem.error(errno.EACCES, shown, winerror=ERROR_ACCESS_DENIED)
                if blocked_by_handles(inode):
                    raise self.sem.error(errno.EACCES, shown, winerror=ERROR_SHARING_VIOLATION)
            core.unlink(w.parent, w.key, w.canon)
        core.leave(run, "remove", text)

    def rename(self, src: str, dst: str, *, replace: bool = True, shown: tuple[str, str] | None = None) -> None:
        """os.rename (replace=False: on Windows an existing target is an error) and os.replace, with rename(2)'s
        checks in the kernel's order (POSIX) or MoveFileExW's (Windows)."""
        core = self.core
        s_shown, d_shown = shown or (src, dst)
        text = f"rename {display(src)} -> {display(dst)}"
        win = self.win
        run = core.enter("rename", text, path_access(RENAME, src, True, self.root, win)
                         + path_access(RENAME, dst, True, self.root, win))
        with self.lock:
            # rename(2)'s order: both paths copied in (length), both parents walked, then the old name looked
            # up (missing: ENOENT), then the new one
            paths = self.paths
            paths.check_length(src, s_shown, d_shown, "os")
            paths.check_length(dst, s_shown, d_shown, "os")
            s = paths.resolve(core.root_inode, src, s_shown, path2=d_shown, two_paths=True)
            d = paths.resolve(core.root_inode, dst, s_shown, path2=d_shown, two_paths=True)
            if s.kind != NORM or d.kind != NORM:
                raise self.sem.error(errno.EBUSY, s_shown, d_shown, winerror=ERROR_ACCESS_DENIED)
            snode, dnode = s.inode, d.inode
            if snode is None:
                paths.check_name(s.name, s_shown, d_shown, "os")
                raise self.sem.error(errno.ENOENT, s_shown, d_shown, winerror=2)
            if dnode is None:
                paths.check_name(d.name, s_shown, d_shown, "os")
            win = self.win
            if not snode.is_dir and (s.slash or d.slash):
                raise paths.slash_error(s_shown, "os", d_shown)
            if win:
                if snode.delete_pending:
                    raise self.sem.error(errno.EACCES, s_shown, d_shown, winerror=ERROR_ACCESS_DENIED)
                if blocked_by_handles(snode):
                    raise self.sem.error(errno.EACCES, s_shown, d_shown, winerror=ERROR_SHARING_VIOLATION)
                if snode.is_dir and _open_below(snode):
                    raise self.sem.error(errno.EACCES, s_shown, d_shown, winerror=ERROR_ACCESS_DENIED)
            if dnode is snode:
                if win and d.parent.entries[d.key][0] != d.name:  # case-only rename on Windows
                    d.parent.entries[d.key] = (d.name, snode)
                    core.journal(("rename", s.canon, d.canon), s.parent, d.parent)
                core.leave(run, "rename", text)
                return
            if snode.is_dir and any(n is snode for n in d.chain):
                raise self.sem.error(errno.EINVAL, s_shown, d_shown, winerror=ERROR_SHARING_VIOLATION)
            if dnode is not None and dnode.is_dir and any(n is dnode for n in s.chain):
                raise self.sem.error(errno.ENOTEMPTY, s_shown, d_shown, winerror=ERROR_ACCESS_DENIED)
            if dnode is not None:
                if win:
                    if not replace:
                        raise self.sem.error(errno.EEXIST, s_shown, d_shown, winerror=183)
                    if dnode.is_dir or dnode.delete_pending or dnode.handles:
                        raise self.sem.error(errno.EACCES, s_shown, d_shown, winerror=ERROR_ACCESS_DENIED)
                elif snode.is_dir and not dnode.is_dir:
                    raise self.sem.error(errno.ENOTDIR, s_shown, d_shown)
                elif not snode.is_dir and dnode.is_dir:
                    raise self.sem.error(errno.EISDIR, s_shown, d_shown)
                elif dnode.is_dir and dnode.entries:
                    raise self.sem.error(errno.ENOTEMPTY, s_shown, d_shown)
                dnode.linked = False
            del s.parent.entries[s.key]
            if not win:
                d.parent.entries.pop(d.key, None)  # tmpfs: the target is a new entry, listed as the newest
            d.parent.entries[d.key] = (d.name, snode)
            rekey(snode, path_key(d.canon, self.root, win))
            s.parent.mtime = d.parent.mtime = core.now()
            core.journal(("rename", s.canon, d.canon), s.parent, d.parent)
        core.leave(run, "rename", text)

    def mkdir(self, path: str, *, shown: str | None = None, exist_ok: bool = False) -> None:
        core = self.core
        shown = path if shown is None else shown
        text = f"mkdir {display(path)}"
        win = self.win
        run = core.enter("mkdir", text, path_access(CREATE, path, True, self.root, win))
        with self.lock:
            w = self.paths.resolve(core.root_inode, path, shown)
            inode = w.inode
            if w.kind == DEVICE:
                raise self.sem.error(errno.ENOTDIR, shown, winerror=ERROR_DIRECTORY)
            if inode is not None:
                core.narrow(run, path_access(READ, path, False, self.root, win))  # read: the name was there
                if exist_ok and inode.is_dir:
                    core.leave(run, "mkdir", text)
                    return
                raise self.sem.error(errno.EEXIST, shown, winerror=183)
            inode = core.new_inode(True, path_key(w.canon, self.root, win))
            w.parent.entries[w.key] = (w.name, inode)
            w.parent.mtime = inode.ctime
            core.journal(("link", w.canon, inode), w.parent)
        core.leave(run, "mkdir", text)

    def rmdir(self, path: str, *, shown: str | None = None) -> None:
        core = self.core
        shown = path if shown is None else shown
        text = f"rmdir {display(path)}"
        run = core.enter("rmdir", text, path_access(REMOVE, path, True, self.root, self.win))
        with self.lock:
            w = self.paths.resolve(core.root_inode, path, shown)
            inode = w.inode
            if w.kind == DEVICE:
                raise self.sem.error(errno.ENOTDIR, shown, winerror=ERROR_DIRECTORY)
            if w.kind == DOT:
                raise self.sem.error(errno.EINVAL, shown, winerror=32)
            if w.kind == DOTDOT:
                raise self.sem.error(errno.ENOTEMPTY, shown, winerror=145)
            if inode is None:
                raise self.sem.error(errno.ENOENT, shown, winerror=2)
            if not inode.is_dir:
                raise self.sem.error(errno.ENOTDIR, shown, winerror=267)
            if w.kind == ROOT:
                raise self.sem.error(errno.EBUSY, shown, winerror=32)
            if inode.entries:
                raise self.sem.error(errno.ENOTEMPTY, shown, winerror=145)
            core.unlink(w.parent, w.key, w.canon)
        core.leave(run, "rmdir", text)

    def listdir(self, path: str, *, shown: str | None = None) -> list[tuple[str, Inode]]:
        """Names in the order the OS lists them (``FakeFS.listing_order``; natively newest first on POSIX, as
        tmpfs lists them, creation order on Windows)."""
        core = self.core
        shown = path if shown is None else shown
        text = f"listdir {display(path)}"
        run = core.enter("listdir", text, path_and_listing(READ, path, self.root, self.win))
        with self.lock:
            w = self.paths.resolve(core.root_inode, path, shown)
            inode = w.inode
            if w.kind == DEVICE:
                raise self.sem.error(errno.ENOTDIR, shown, winerror=ERROR_DIRECTORY)
            if inode is None:
                raise self.sem.error(errno.ENOENT, shown, winerror=3)
            if not inode.is_dir:
                raise self.sem.error(errno.ENOTDIR, shown, winerror=267)
            listing = list(inode.entries.values())
            if core.newest_first:
                listing.reverse()
        core.leave(run, "listdir", text)
        return listing

    def stat(self, path: str, *, shown: str | None = None, quiet: bool = False) -> os.stat_result | None:
        """os.stat; with ``quiet`` a missing path gives None instead of an error (os.path.exists and kin).
        A delete-pending name (Windows) still stats: CPython falls back to the directory entry there."""
        core = self.core
        shown = path if shown is None else shown
        text = f"stat {display(path)}"
        run = core.enter("stat", text, path_and_listing(READ, path, self.root, self.win))
        with self.lock:
            try:
                inode = self._resolve_existing(path, shown)
            except OSError:
                if not quiet:
                    raise
                inode = None
            result = None if inode is None else stat_result(inode)
        core.leave(run, "stat", text)
        return result

    def _resolve_existing(self, path: str, shown: str) -> Inode:
        w = self.paths.resolve(self.core.root_inode, path, shown)
        if w.kind == DEVICE:
            return device_inode()
        if w.inode is None:
            raise self.sem.error(errno.ENOENT, shown, winerror=2)
        if w.slash and not w.inode.is_dir:
            raise self.paths.slash_error(shown)
        return w.inode

    def chmod(self, path: str, mode: int, *, shown: str | None = None) -> None:
        core = self.core
        shown = path if shown is None else shown
        text = f"chmod {display(path)} {mode:o}"
        run = core.enter("chmod", text, path_access(WRITE, path, False, self.root, self.win))
        with self.lock:
            inode = self._resolve_existing(path, shown)
            inode.mode = stat_mod.S_IFMT(inode.mode) | (mode & 0o7777)
        core.leave(run, "chmod", text)

    def utime(self, path: str, when: float | None = None, *, shown: str | None = None) -> None:
        core = self.core
        shown = path if shown is None else shown
        text = f"utime {display(path)}"
        run = core.enter("utime", text, path_access(WRITE, path, False, self.root, self.win))
        with self.lock:
            inode = self._resolve_existing(path, shown)
            inode.mtime = core.now() if when is None else when
        core.leave(run, "utime", text)


def _open_below(node: Inode) -> bool:
    """Whether a file under directory ``node`` is open (Windows refuses to rename such a directory)."""
    stack = [node]
    while stack:
        n = stack.pop()
        if n.handles and not n.is_dir:
            return True
        stack.extend(child for _, child in n.entries.values())
    return False


__racecheck_engine__ = True  # the fake is part of the engine: never instrumented itself
