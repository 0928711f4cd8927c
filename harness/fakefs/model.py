"""The store: one in-memory filesystem shared by every thread of a run, with a crash-consistency model.

Why its own model: the fake must (a) make every operation a scheduling point of the controlled scheduler, before
its effect, (b) fail like the imitated OS (sharing violations, orphaned inodes), and (c) know what a power loss
keeps. The store holds all state itself (never on fsspec instances, which fsspec caches per thread) and guards it
with a real lock that is never held across a scheduling point, so the scheduler can park a thread at any point.

Durability (LazyFS style, see docs/fakefs.md):
  * file data is durable up to the last fsync of any handle on the file;
  * namespace operations (create, unlink, rename, mkdir, rmdir) go to an ordered journal; fsync of a directory
    commits the journal up to the last entry touching that directory (a journal commits in order);
  * at power loss the committed namespace survives, plus a prefix of the uncommitted journal chosen by the run
    (0 = none), and each file keeps its synced data (with ``torn_writes``: a chosen prefix of later writes).
"""

from __future__ import annotations

import errno
import hashlib
import os
import posixpath
import stat as stat_mod
import time
from typing import Any

from racecheck.fakefs.faults import FaultPlan
from racecheck.fakefs.semantics import (
    ERROR_ACCESS_DENIED,
    ERROR_DIRECTORY,
    ERROR_SHARING_VIOLATION,
    posix_error,
    semantics_for,
)
from racecheck.fakefs.spec import FakeFS
from racecheck.runtime import current_run, real_allocate_lock

_roots: tuple[str, ...] = ()


def _note_root(root: str) -> None:
    """Remember a mount root (every Store does): the real-disk guard only looks closer at paths under one."""
    global _roots
    if root not in _roots:
        _roots = (*_roots, root)


def known_roots() -> tuple[str, ...]:
    """Every mount root a store was created with in this process (a cheap prefilter for the audit hook)."""
    return _roots


FD_BASE = 1 << 30  # fake descriptors live far above any real one, so os.close(fd) can tell them apart
DEV = 0x7ACE


class Inode:
    """A file or directory. ``synced`` is the durable content; ``unsynced`` the writes since the last fsync."""

    __slots__ = ("ino", "is_dir", "data", "synced", "unsynced", "entries", "handles", "delete_pending",
                 "pending_from", "mode", "mtime", "ctime", "linked")

    def __init__(self, ino: int, is_dir: bool, now: float) -> None:
        self.ino = ino
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
    """One open file description: position and access mode on an inode (which may be unlinked meanwhile)."""

    __slots__ = ("store", "inode", "path", "shown", "fd", "readable", "writable", "append", "pos", "closed",
                 "share_delete", "delete_on_close", "generation", "mode")

    def __init__(self, store: Store, inode: Inode, path: str, shown: str, fd: int, flags: int, mode: str,
                 share_delete: bool, delete_on_close: bool) -> None:
        acc = flags & (os.O_RDONLY | os.O_WRONLY | os.O_RDWR)
        self.store = store
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
        self.generation = store.generation
        self.mode = mode


ROOT, NORM, DOT, DOTDOT, DEVICE = "root", "name", ".", "..", "device"


class Where:
    """The outcome of resolving a path: the directory holding the last component and what it names.

    ``kind`` is NORM for an ordinary last name, DOT/DOTDOT for ``.``/``..`` and ROOT for the mount root (each
    fails differently in rename/unlink/rmdir/mkdir); ``slash`` says the path ended in "/"; ``canon`` is the
    canonical path (for the journal); ``chain`` the directories walked through (ancestor checks of rename)."""

    __slots__ = ("parent", "key", "name", "inode", "kind", "slash", "canon", "chain")

    def __init__(self, parent: Inode | None, key: str, name: str, inode: Inode | None, kind: str, slash: bool,
                 canon: str, chain: tuple) -> None:
        self.parent, self.key, self.name, self.inode = parent, key, name, inode
        self.kind, self.slash, self.canon, self.chain = kind, slash, canon, chain


def _display(path: str) -> str:
    """The path as the trace shows it (textually normalised: deterministic and short)."""
    norm = posixpath.normpath(path)
    return "/" + norm.lstrip("/") if norm.startswith("//") else norm


class Store:
    """The filesystem of one run. Paths are normalized absolute virtual paths under ``spec.root``."""

    def __init__(self, spec: FakeFS | None = None) -> None:
        self.spec = spec or FakeFS()
        self.sem = semantics_for(self.spec.semantics)
        self.newest_first = self.spec.newest_first(self.sem.newest_first)
        self.root = self.spec.root
        _note_root(self.root)
        self.faults = FaultPlan(self.spec)
        self._lock = real_allocate_lock()
        self._ino = 0
        self._fd = FD_BASE
        self._tmp = 0
        self.generation = 0
        self.fds: dict[int, Handle] = {}
        self.log: list[str] = []
        self.root_inode = self._new_inode(True)
        self.durable: dict[tuple, tuple[tuple, Inode]] = {(): ((), self.root_inode)}
        self.journal: list[tuple] = []
        self.crash_plan: tuple | None = None

    def adopt(self, other: Store) -> None:
        """Take over ``other``'s tree and durability state (same semantics required): lets a run start from a
        prepared filesystem, e.g. fixtures built on the standalone store before an exploration."""
        if other.spec.semantics != self.spec.semantics or other.root != self.root:
            raise ValueError("adopt() needs a store with the same semantics and root")
        with self._lock:
            self.root_inode, self._ino, self._tmp = other.root_inode, other._ino, other._tmp
            self.durable, self.journal = other.durable, other.journal

    # ----------------------------------------------------------------------------------------- run plumbing
    def _run(self) -> Any | None:
        run = current_run()
        if run is not None and run.resources.get("fakefs") is self:
            return run
        return None

    def _enter(self, kind: str, text: str) -> Any | None:
        """The scheduling point of an operation, then the faults drawn for it; both before any effect. Called only
        from this store's own operations, so two engine frames lie between ``schedule`` and the caller's code."""
        run = self._run()
        if run is not None:
            run.schedule("fs." + text, skip=2)
            if self.faults.active:
                self.faults.before(run, kind, text, self._used() if self.spec.enospc else 0)
        return run

    def _leave(self, run: Any | None, kind: str, text: str) -> None:
        self.log.append(text)
        if run is not None and self.faults.crash_kinds and self.faults.crash_due(kind):
            self.prepare_crash(run)
            run.crash(f"power loss after fs.{text}")

    def _now(self) -> float:
        run = current_run()
        return float(run.now()) if run is not None else time.time()

    def _new_inode(self, is_dir: bool) -> Inode:
        self._ino += 1
        return Inode(self._ino, is_dir, 0.0 if self._ino == 1 else self._now())

    def _used(self) -> int:
        seen: set[int] = set()
        total = 0
        stack = [self.root_inode] + [h.inode for h in self.fds.values()]
        while stack:
            node = stack.pop()
            if node.ino in seen:
                continue
            seen.add(node.ino)
            total += len(node.data)
            stack.extend(child for _, child in node.entries.values())
        return total

    # ------------------------------------------------------------------------------------------ resolution
    def _parts(self, path: str) -> list[str]:
        """The raw components of a path under the root ("a/./b/" -> ["a", ".", "b", ""]): nothing resolved yet."""
        if path == self.root:
            return []
        if not path.startswith(self.root + "/"):
            raise ValueError(f"{path!r} is not under the fake filesystem root {self.root!r}")
        return path[len(self.root) + 1:].split("/")

    def _resolve(self, path: str, shown: str, api: str = "os", path2: str | None = None, *,
                 two_paths: bool = False) -> Where:
        """Where ``path`` leads, component by component as the kernel walks it (POSIX), or after Win32's textual
        normalisation (Windows: ``..`` is textual, trailing dots/spaces go, reserved and invalid names fail).

        POSIX: every component but the last must be an existing directory (ENOENT / ENOTDIR otherwise), so
        ``x/../a`` fails when ``x`` is missing and ``a/`` never names a regular file.

        ``two_paths``: a call on two paths (rename), which checks both lengths before walking either and looks up
        both last names after walking both (``_check_length`` and ``_check_name`` are then its business)."""
        raw = self._parts(path)
        if not two_paths:
            self._check_length(path, shown, path2, api)
        if self.sem.textual_paths:
            comps, slash = self.sem.normalize(raw, shown, api, path2)
        else:
            comps = [c for c in raw if c]
            slash = bool(comps) and raw[-1] == ""
        stack = [self.root_inode]
        names: list[str] = []
        for name in comps[:-1]:
            if name == ".":
                continue
            if name == "..":
                if len(stack) > 1:
                    stack.pop()
                    names.pop()
                continue
            entry = stack[-1].entries.get(self.sem.key(name))
            if entry is None:
                self._check_name(name, shown, path2, api)
                raise self.sem.error(errno.ENOENT, shown, path2, api=api, winerror=3)
            if not entry[1].is_dir:
                raise self.sem.error(errno.ENOTDIR, shown, path2, api=api, winerror=3)
            stack.append(entry[1])
            names.append(entry[0])
        if not comps:
            return Where(None, "", "", self.root_inode, ROOT, False, self.root, ())
        last = comps[-1]
        if last == "." or last == "..":
            if last == "..":
                if len(stack) > 1:
                    stack.pop()
                    names.pop()
            canon = "/".join([self.root] + names)
            kind = DOT if last == "." else DOTDOT
            return Where(None, "", "", stack[-1], kind, slash, canon, tuple(stack[:-1]))
        if self.sem.is_device(last):
            return Where(stack[-1], "", last, None, DEVICE, slash, "/".join([self.root] + names + [last]),
                         tuple(stack))
        key = self.sem.key(last)
        entry = stack[-1].entries.get(key)
        if entry is None and not two_paths:
            self._check_name(last, shown, path2, api)
        name = entry[0] if entry else last
        return Where(stack[-1], key, last, entry[1] if entry else None, NORM, slash,
                     "/".join([self.root] + names + [name]), tuple(stack))

    def _check_length(self, path: str, shown: str, path2: str | None, api: str) -> None:
        """A path of PATH_MAX bytes or more fails before any lookup (ENAMETOOLONG, from the kernel's copy of it)."""
        path_max = self.sem.path_max
        if path_max is not None and len(path) * 4 >= path_max and len(os.fsencode(path)) >= path_max:
            raise self.sem.error(errno.ENAMETOOLONG, shown, path2, api=api)

    def _check_name(self, name: str, shown: str, path2: str | None, api: str) -> None:
        """A name no directory holds, looked up: longer than NAME_MAX, the lookup itself fails (ENAMETOOLONG, as
        Linux's filesystems answer before saying the name is missing or creating it). Names that exist passed."""
        name_max = self.sem.name_max
        if name_max is not None and len(name) * 4 > name_max and len(os.fsencode(name)) > name_max:
            raise self.sem.error(errno.ENAMETOOLONG, shown, path2, api=api)

    def _lookup(self, path: str, shown: str, api: str = "os", path2: str | None = None):
        """(parent, key, name, inode or None) for callers that do not care about odd spellings."""
        w = self._resolve(path, shown, api, path2)
        return w.parent, w.key, w.name, w.inode

    def _keys(self, path: str) -> tuple[tuple, tuple]:
        """Journal address of a canonical path: (lookup keys, display names) of its components, current case."""
        keys, names, node = [], [], self.root_inode
        for name in (p for p in self._parts(path) if p):
            key = self.sem.key(name)
            entry = node.entries.get(key) if node is not None else None
            keys.append(key)
            names.append(entry[0] if entry else name)
            node = entry[1] if entry else None
        return tuple(keys), tuple(names)

    def _blocked_by_handles(self, inode: Inode) -> bool:
        return any(not h.share_delete for h in inode.handles)

    def _slash_error(self, shown: str, api: str = "os", path2: str | None = None) -> OSError:
        """A regular file named with a trailing slash: ENOTDIR on POSIX; Windows rejects the name (123/EINVAL)."""
        code = errno.EINVAL if self._win() else errno.ENOTDIR
        return self.sem.error(code, shown, path2, api=api, winerror=123)

    def _win(self) -> bool:
        return self.sem.name == "windows"

    # ------------------------------------------------------------------------------------ namespace ops
    def open(self, path: str, flags: int, *, shown: str | None = None, mode: str = "", api: str = "open",
             share_delete: bool = False, delete_on_close: bool = False, directory_ok: bool = False) -> Handle:
        """open(2). ``directory_ok``: os.open may open a directory read-only (to fsync it); open() may not.
        ``delete_on_close`` is O_TEMPORARY on Windows: DELETE access, so it conflicts with openers that do not
        share delete (and they with it): a second ``open()`` of a live NamedTemporaryFile is a sharing violation."""
        shown = path if shown is None else shown
        text = f"open {_display(path)} {mode or _flag_text(flags)}"
        run = self._enter("open", text)
        with self._lock:
            w = self._resolve(path, shown, api)
            inode = w.inode
            writing = bool(flags & (os.O_WRONLY | os.O_RDWR))
            creating = bool(flags & os.O_CREAT)
            if w.kind == DEVICE:  # a DOS device (NUL, CON, ...): a sink that reads as empty, never a file
                inode = self._new_inode(False)
                inode.linked = False
                inode.mode = stat_mod.S_IFCHR | 0o666
            elif creating and w.kind == NORM and w.slash and not self._win():
                raise self.sem.error(errno.EISDIR, shown, api=api)  # Linux: O_CREAT with a trailing slash
            elif inode is None:
                if not creating:
                    raise self.sem.error(errno.ENOENT, shown, api=api, winerror=2)
                if w.slash:
                    raise self.sem.error(errno.EINVAL, shown, api=api, winerror=123)
                inode = self._new_inode(False)
                w.parent.entries[w.key] = (w.name, inode)
                w.parent.mtime = inode.ctime
                self._journal(("link", w.canon, inode), w.parent)
            else:
                if inode.delete_pending:
                    raise self.sem.error(errno.EACCES, shown, api=api, winerror=ERROR_ACCESS_DENIED)
                if creating and flags & os.O_EXCL:
                    raise self.sem.error(errno.EEXIST, shown, api=api, winerror=80)
                if self._win() and inode.is_dir:
                    raise self.sem.error(errno.EACCES, shown, api="open")
                if creating and (inode.is_dir or (w.kind == NORM and w.slash)):
                    raise self.sem.error(errno.EISDIR, shown, api=api)
                if w.slash and not inode.is_dir:
                    raise self._slash_error(shown, api)
                if inode.is_dir and (writing or not directory_ok):
                    raise self.sem.error(errno.EISDIR, shown, api=api)
                if self._win() and inode.handles:
                    if (not share_delete and any(h.delete_on_close for h in inode.handles)) or (
                            delete_on_close and self._blocked_by_handles(inode)):
                        raise self.sem.error(errno.EACCES, shown, api=api, winerror=ERROR_SHARING_VIOLATION)
                if flags & os.O_TRUNC and writing and inode.data:
                    inode.data = bytearray()
                    inode.unsynced.append(("t", 0))
                    inode.mtime = self._now()
            self._fd += 1
            handle = Handle(self, inode, w.canon, shown, self._fd, flags, mode or _flag_text(flags),
                            share_delete, delete_on_close)
            inode.handles.append(handle)
            self.fds[handle.fd] = handle
        self._leave(run, "open", text)
        return handle

    def remove(self, path: str, *, shown: str | None = None) -> None:
        """unlink(2) / DeleteFileW. Windows generation modelled: 10 1903+ (NTFS POSIX delete): a file whose only
        handles share delete loses its name at once; any other open handle is a sharing violation (32)."""
        shown = path if shown is None else shown
        text = f"remove {_display(path)}"
        run = self._enter("remove", text)
        with self._lock:
            w = self._resolve(path, shown)
            inode = w.inode
            if w.kind != NORM:
                raise self.sem.error(errno.EACCES if w.kind == DEVICE else errno.EISDIR, shown,
                                     winerror=ERROR_ACCESS_DENIED)
            if inode is None:
                raise self.sem.error(errno.ENOENT, shown, winerror=2)
            if inode.is_dir:
                raise self.sem.error(errno.EISDIR, shown, winerror=ERROR_ACCESS_DENIED)
            if w.slash:
                raise self._slash_error(shown)
            if self._win():
                if inode.delete_pending:
                    raise self.sem.error(errno.EACCES, shown, winerror=ERROR_ACCESS_DENIED)
                if self._blocked_by_handles(inode):
                    raise self.sem.error(errno.EACCES, shown, winerror=ERROR_SHARING_VIOLATION)
            self._unlink(w.parent, w.key, w.canon)
        self._leave(run, "remove", text)

    def _unlink(self, parent: Inode, key: str, path: str) -> None:
        _, inode = parent.entries.pop(key)
        inode.linked = False
        parent.mtime = self._now()
        self._journal(("unlink", path), parent)

    def rename(self, src: str, dst: str, *, replace: bool = True, shown: tuple[str, str] | None = None) -> None:
        """os.rename (replace=False: on Windows an existing target is an error) and os.replace, with rename(2)'s
        checks in the kernel's order (POSIX) or MoveFileExW's (Windows)."""
        s_shown, d_shown = shown or (src, dst)
        text = f"rename {_display(src)} -> {_display(dst)}"
        run = self._enter("rename", text)
        with self._lock:
            # rename(2)'s order: both paths copied in (length), both parents walked, then the old name looked
            # up (missing: ENOENT), then the new one
            self._check_length(src, s_shown, d_shown, "os")
            self._check_length(dst, s_shown, d_shown, "os")
            s = self._resolve(src, s_shown, path2=d_shown, two_paths=True)
            d = self._resolve(dst, s_shown, path2=d_shown, two_paths=True)
            if s.kind != NORM or d.kind != NORM:
                raise self.sem.error(errno.EBUSY, s_shown, d_shown, winerror=ERROR_ACCESS_DENIED)
            snode, dnode = s.inode, d.inode
            if snode is None:
                self._check_name(s.name, s_shown, d_shown, "os")
                raise self.sem.error(errno.ENOENT, s_shown, d_shown, winerror=2)
            if dnode is None:
                self._check_name(d.name, s_shown, d_shown, "os")
            win = self._win()
            if not snode.is_dir and (s.slash or d.slash):
                raise self._slash_error(s_shown, "os", d_shown)
            if win:
                if snode.delete_pending:
                    raise self.sem.error(errno.EACCES, s_shown, d_shown, winerror=ERROR_ACCESS_DENIED)
                if self._blocked_by_handles(snode):
                    raise self.sem.error(errno.EACCES, s_shown, d_shown, winerror=ERROR_SHARING_VIOLATION)
                if snode.is_dir and self._open_below(snode):
                    raise self.sem.error(errno.EACCES, s_shown, d_shown, winerror=ERROR_ACCESS_DENIED)
            if dnode is snode:
                if win and d.parent.entries[d.key][0] != d.name:  # case-only rename on Windows
                    d.parent.entries[d.key] = (d.name, snode)
                    self._journal(("rename", s.canon, d.canon), s.parent, d.parent)
                self._leave(run, "rename", text)
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
            s.parent.mtime = d.parent.mtime = self._now()
            self._journal(("rename", s.canon, d.canon), s.parent, d.parent)
        self._leave(run, "rename", text)

    def _open_below(self, node: Inode) -> bool:
        stack = [node]
        while stack:
            n = stack.pop()
            if n.handles and not n.is_dir:
                return True
            stack.extend(child for _, child in n.entries.values())
        return False

    def mkdir(self, path: str, *, shown: str | None = None, exist_ok: bool = False) -> None:
        shown = path if shown is None else shown
        text = f"mkdir {_display(path)}"
        run = self._enter("mkdir", text)
        with self._lock:
            w = self._resolve(path, shown)
            inode = w.inode
            if w.kind == DEVICE:
                raise self.sem.error(errno.ENOTDIR, shown, winerror=ERROR_DIRECTORY)
            if inode is not None:
                if exist_ok and inode.is_dir:
                    self._leave(run, "mkdir", text)
                    return
                raise self.sem.error(errno.EEXIST, shown, winerror=183)
            inode = self._new_inode(True)
            w.parent.entries[w.key] = (w.name, inode)
            w.parent.mtime = inode.ctime
            self._journal(("link", w.canon, inode), w.parent)
        self._leave(run, "mkdir", text)

    def rmdir(self, path: str, *, shown: str | None = None) -> None:
        shown = path if shown is None else shown
        text = f"rmdir {_display(path)}"
        run = self._enter("rmdir", text)
        with self._lock:
            w = self._resolve(path, shown)
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
            self._unlink(w.parent, w.key, w.canon)
        self._leave(run, "rmdir", text)

    def listdir(self, path: str, *, shown: str | None = None) -> list[tuple[str, Inode]]:
        """Names in the order the OS lists them (``FakeFS.listing_order``; natively newest first on POSIX, as
        tmpfs lists them, creation order on Windows)."""
        shown = path if shown is None else shown
        text = f"listdir {_display(path)}"
        run = self._enter("listdir", text)
        with self._lock:
            w = self._resolve(path, shown)
            inode = w.inode
            if w.kind == DEVICE:
                raise self.sem.error(errno.ENOTDIR, shown, winerror=ERROR_DIRECTORY)
            if inode is None:
                raise self.sem.error(errno.ENOENT, shown, winerror=3)
            if not inode.is_dir:
                raise self.sem.error(errno.ENOTDIR, shown, winerror=267)
            listing = list(inode.entries.values())
            if self.newest_first:
                listing.reverse()
        self._leave(run, "listdir", text)
        return listing

    def stat(self, path: str, *, shown: str | None = None, quiet: bool = False) -> os.stat_result | None:
        """os.stat; with ``quiet`` a missing path gives None instead of an error (os.path.exists and kin).
        A delete-pending name (Windows) still stats: CPython falls back to the directory entry there."""
        shown = path if shown is None else shown
        text = f"stat {_display(path)}"
        run = self._enter("stat", text)
        with self._lock:
            try:
                inode = self._resolve_existing(path, shown)
            except OSError:
                if not quiet:
                    raise
                inode = None
            result = None if inode is None else self._stat_of(inode)
        self._leave(run, "stat", text)
        return result

    def _resolve_existing(self, path: str, shown: str) -> Inode:
        w = self._resolve(path, shown)
        if w.kind == DEVICE:
            device = Inode(0, False, 0.0)
            device.mode, device.linked = stat_mod.S_IFCHR | 0o666, False
            return device
        if w.inode is None:
            raise self.sem.error(errno.ENOENT, shown, winerror=2)
        if w.slash and not w.inode.is_dir:
            raise self._slash_error(shown)
        return w.inode

    def _stat_of(self, inode: Inode) -> os.stat_result:
        size = len(inode.data) if not inode.is_dir else 4096
        nlink = (2 + sum(1 for _, c in inode.entries.values() if c.is_dir)) if inode.is_dir else int(inode.linked)
        times = {"st_atime": inode.mtime, "st_mtime": inode.mtime, "st_ctime": inode.ctime,
                 "st_atime_ns": int(inode.mtime * 1e9), "st_mtime_ns": int(inode.mtime * 1e9),
                 "st_ctime_ns": int(inode.ctime * 1e9)}
        return os.stat_result((inode.mode, inode.ino, DEV, nlink, 0, 0, size, int(inode.mtime),
                               int(inode.mtime), int(inode.ctime)), times)

    def chmod(self, path: str, mode: int, *, shown: str | None = None) -> None:
        shown = path if shown is None else shown
        text = f"chmod {_display(path)} {mode:o}"
        run = self._enter("chmod", text)
        with self._lock:
            inode = self._resolve_existing(path, shown)
            inode.mode = stat_mod.S_IFMT(inode.mode) | (mode & 0o7777)
        self._leave(run, "chmod", text)

    def utime(self, path: str, when: float | None = None, *, shown: str | None = None) -> None:
        shown = path if shown is None else shown
        text = f"utime {_display(path)}"
        run = self._enter("utime", text)
        with self._lock:
            inode = self._resolve_existing(path, shown)
            inode.mtime = self._now() if when is None else when
        self._leave(run, "utime", text)

    def truncate_path(self, path: str, length: int, *, shown: str | None = None) -> None:
        handle = self.open(path, os.O_WRONLY, shown=shown, mode="r+", api="os")
        try:
            self.h_truncate(handle, length)
        finally:
            self.h_close(handle)

    def sync(self) -> None:
        """sync(2): everything written so far becomes durable (also a handy way to set up a durable state)."""
        run = self._enter("sync", "sync")
        with self._lock:
            self._commit(len(self.journal))
            for node in self._all_inodes():
                node.synced = bytes(node.data)
                node.unsynced.clear()
        self._leave(run, "sync", "sync")

    # ---------------------------------------------------------------------------------------- handle ops
    def _check(self, handle: Handle) -> None:
        if handle.closed or handle.generation != self.generation:
            raise OSError(errno.EBADF, os.strerror(errno.EBADF))

    def h_write(self, handle: Handle, data: bytes) -> int:
        data = bytes(data)
        text = f"write {handle.path} {len(data)}"
        self._check(handle)
        run = self._enter("write", text)
        with self._lock:
            self._check(handle)
            if not handle.writable:
                raise OSError(errno.EBADF, os.strerror(errno.EBADF))
            # write(2) of 0 bytes to a regular file returns 0 "without causing any other effect": no move to the
            # end in append mode, no zero fill up to a position past the end
            if data:
                self._write_locked(handle, data)
        self._leave(run, "write", text)
        return len(data)

    def _write_locked(self, handle: Handle, data: bytes) -> None:
        """``h_write``'s effect, under the store's lock: data at the position (the end in append mode)."""
        inode = handle.inode
        pos = len(inode.data) if handle.append else handle.pos
        growth = max(0, pos + len(data) - len(inode.data))
        quota = self.faults.quota
        if quota is not None and growth and self._used() + growth > quota:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        if pos > len(inode.data):
            inode.data.extend(b"\0" * (pos - len(inode.data)))
        inode.data[pos:pos + len(data)] = data
        inode.unsynced.append(("w", pos, data))
        inode.mtime = self._now()
        handle.pos = pos + len(data)

    def h_read(self, handle: Handle, size: int = -1) -> bytes:
        text = f"read {handle.path} {size}"
        self._check(handle)
        run = self._enter("read", text)
        with self._lock:
            self._check(handle)
            if not handle.readable:
                raise OSError(errno.EBADF, os.strerror(errno.EBADF))
            data = handle.inode.data
            end = len(data) if size is None or size < 0 else handle.pos + size
            chunk = bytes(data[handle.pos:end])
            handle.pos += len(chunk)
        self._leave(run, "read", text)
        return chunk

    def h_seek(self, handle: Handle, offset: int, whence: int = 0) -> int:
        """Position is private to the handle: not a scheduling point."""
        self._check(handle)
        with self._lock:
            base = {0: 0, 1: handle.pos, 2: len(handle.inode.data)}[whence]
            if base + offset < 0:
                raise OSError(errno.EINVAL, os.strerror(errno.EINVAL))
            handle.pos = base + offset
            return handle.pos

    def h_truncate(self, handle: Handle, length: int) -> int:
        text = f"truncate {handle.path} {length}"
        self._check(handle)
        run = self._enter("truncate", text)
        with self._lock:
            self._check(handle)
            if not handle.writable:
                raise OSError(errno.EINVAL, os.strerror(errno.EINVAL))
            inode = handle.inode
            if length > len(inode.data):
                inode.data.extend(b"\0" * (length - len(inode.data)))
            else:
                del inode.data[length:]
            inode.unsynced.append(("t", length))
        self._leave(run, "truncate", text)
        return length

    def h_fsync(self, handle: Handle) -> None:
        """File: its data becomes durable. Directory: the journal commits up to its last entry on that dir."""
        text = f"fsync {handle.path}"
        self._check(handle)
        run = self._enter("fsync", text)
        with self._lock:
            self._check(handle)
            inode = handle.inode
            if inode.is_dir:
                last = max((i for i, e in enumerate(self.journal) if any(d is inode for d in e[-1])), default=-1)
                self._commit(last + 1)
            else:
                inode.synced = bytes(inode.data)
                inode.unsynced.clear()
        self._leave(run, "fsync", text)

    def h_fstat(self, handle: Handle) -> os.stat_result:
        self._check(handle)
        with self._lock:
            return self._stat_of(handle.inode)

    def h_close(self, handle: Handle) -> None:
        if handle.closed:
            return
        if handle.generation != self.generation:  # a handle from before a power loss: nothing to do
            handle.closed = True
            return
        text = f"close {handle.path}"
        run = self._enter("close", text)
        with self._lock:
            if handle.closed:
                return
            handle.closed = True
            self.fds.pop(handle.fd, None)
            inode = handle.inode
            inode.handles.remove(handle)
            if handle.delete_on_close and inode.linked and not inode.delete_pending:
                parent, key, _path = self._parent_of(inode)
                if parent is not None:
                    inode.delete_pending = True
                    inode.pending_from = (parent, key)
            if inode.delete_pending and not inode.handles and inode.pending_from is not None:
                parent, key = inode.pending_from
                if parent.entries.get(key, (None, None))[1] is inode:
                    self._unlink(parent, key, self._path_of(parent, key))
                inode.delete_pending = False
        self._leave(run, "close", text)

    def dir_path(self, fd: int) -> str:
        """Where directory descriptor ``fd`` is now: what ``*at()`` calls resolve a relative name against. The
        descriptor holds the directory itself, not its name, so a directory renamed since is followed; one
        removed since has no names left in it (ENOENT), a file's descriptor is ENOTDIR, a closed one EBADF."""
        with self._lock:
            handle = self.fds.get(fd)
            if handle is None or handle.closed:
                raise posix_error(errno.EBADF)
            node = handle.inode
            if not node.is_dir:
                raise posix_error(errno.ENOTDIR)
            if node is self.root_inode:
                return self.root
            parent, _key, path = self._parent_of(node)
            if parent is None:
                raise posix_error(errno.ENOENT)
            return path

    def _parent_of(self, target: Inode) -> tuple[Inode | None, str, str]:
        """(directory holding ``target``, its key there, ``target``'s current path), found in one walk; (None, "",
        "") when no directory holds it (removed)."""
        stack = [(self.root_inode, self.root)]
        while stack:
            node, prefix = stack.pop()
            for key, (name, child) in node.entries.items():
                if child is target:
                    return node, key, f"{prefix}/{name}"
                if child.is_dir:
                    stack.append((child, f"{prefix}/{name}"))
        return None, "", ""

    def _path_of(self, parent: Inode, key: str) -> str:
        def find(node: Inode, prefix: str) -> str | None:
            if node is parent:
                return f"{prefix}/{parent.entries[key][0]}"
            for _k, (name, child) in node.entries.items():
                if child.is_dir:
                    hit = find(child, f"{prefix}/{name}")
                    if hit:
                        return hit
            return None

        return find(self.root_inode, self.root) or self.root

    # ------------------------------------------------------------------------------------ temp names
    def temp_name(self, directory: str, prefix: str = "tmp", suffix: str = "") -> str:
        """Deterministic temporary names (real tempfile names are random and would break replay)."""
        with self._lock:
            self._tmp += 1
            return posixpath.join(directory, f"{prefix}{self._tmp:08d}{suffix}")

    # ---------------------------------------------------------------------------------- durability
    def _journal(self, entry: tuple, *dirs: Inode) -> None:
        op, path, *rest = entry
        if op == "rename":
            dst = rest[0]
            self.journal.append(("rename", self._keys(path), self._keys(dst), dirs))
        elif op == "link":
            self.journal.append(("link", self._keys(path), rest[0], dirs))
        else:
            self.journal.append((op, self._keys(path), None, dirs))

    def _commit(self, upto: int) -> None:
        for entry in self.journal[:upto]:
            _apply(self.durable, entry)
        del self.journal[:upto]

    def _all_inodes(self) -> list[Inode]:
        nodes, stack, seen = [], [self.root_inode] + [h.inode for h in self.fds.values()], set()
        while stack:
            node = stack.pop()
            if node.ino in seen:
                continue
            seen.add(node.ino)
            nodes.append(node)
            stack.extend(child for _, child in node.entries.values())
        return sorted(nodes, key=lambda n: n.ino)

    def prepare_crash(self, run: Any) -> None:
        """Draw, in the crashing thread, what the power loss keeps: a journal prefix and (torn) file data."""
        with self._lock:
            pending = len(self.journal)
            dirty = [n for n in self._all_inodes() if n.unsynced and not n.is_dir]
        prefix = run.choose(pending + 1, "fs.crash.journal") if pending else 0
        kept: dict[int, int] = {}
        if self.spec.torn_writes:
            for node in dirty:
                kept[node.ino] = run.choose(2 * len(node.unsynced) + 1, f"fs.crash.data #{node.ino}")
        self.crash_plan = (prefix, kept)

    def power_loss(self) -> None:
        """Reduce the store to what survives a power loss (see the module docstring); handles die with it."""
        prefix, kept = self.crash_plan or (0, {})
        self.crash_plan = None
        with self._lock:
            durable = dict(self.durable)
            for entry in self.journal[:prefix]:
                _apply(durable, entry)
            self.generation += 1
            for handle in list(self.fds.values()):
                handle.closed = True
            self.fds.clear()
            fresh: dict[int, Inode] = {}
            root = None
            for keys in sorted(durable, key=len):
                names, old = durable[keys]
                node = fresh.get(old.ino)
                if node is None:
                    node = Inode(old.ino, old.is_dir, old.mtime)
                    node.mode = old.mode
                    node.data = bytearray(_survivor(old, kept.get(old.ino, 0)))
                    node.synced = bytes(node.data)
                    fresh[old.ino] = node
                if not keys:
                    root = node
                    continue
                parent_keys = keys[:-1]
                if parent_keys in durable and durable[parent_keys][1].ino in fresh:
                    fresh[durable[parent_keys][1].ino].entries[keys[-1]] = (names[-1], node)
            self.root_inode = root
            self.journal.clear()
            self.durable = {}
            self._rebuild_durable(root, (), ())
            self.log.append("power loss")

    def _rebuild_durable(self, node: Inode, keys: tuple, names: tuple) -> None:
        self.durable[keys] = (names, node)
        for key, (name, child) in node.entries.items():
            self._rebuild_durable(child, keys + (key,), names + (name,))

    # -------------------------------------------------------------------------------- introspection
    def files(self) -> list[tuple[str, int, str]]:
        """Sorted (path, size, sha256 hex[:16]) of every reachable regular file: for oracles and traces."""
        out = []
        with self._lock:
            stack = [(self.root, self.root_inode)]
            while stack:
                prefix, node = stack.pop()
                for name, child in node.entries.values():
                    path = f"{prefix}/{name}"
                    if child.is_dir:
                        stack.append((path, child))
                    else:
                        out.append((path, len(child.data), hashlib.sha256(child.data).hexdigest()[:16]))
        return sorted(out)

    def read_bytes(self, path: str) -> bytes | None:
        """Content of a file, or None: for oracles, without a scheduling point."""
        with self._lock:
            try:
                inode = self._lookup(path, path)[3]
            except OSError:
                return None
            return None if inode is None or inode.is_dir else bytes(inode.data)

    def open_handles(self) -> list[tuple[str, str, bool]]:
        """(path at open, mode, unlinked?) of every open handle, in opening order."""
        with self._lock:
            return [(h.path, h.mode, not h.inode.linked) for h in sorted(self.fds.values(), key=lambda h: h.fd)]


def _apply(durable: dict, entry: tuple) -> None:
    """Replay one journal entry on a flat {keys: (names, inode)} namespace."""
    op, (keys, names), arg, _dirs = entry
    if op == "link":
        durable[keys] = (names, arg)
    elif op == "unlink":
        durable.pop(keys, None)
    elif op == "rename":
        dkeys, dnames = arg
        n = len(keys)
        if dkeys == keys:  # case-only rename: same entry, new display name
            if keys in durable:
                durable[keys] = (dnames, durable[keys][1])
            return
        for k in [k for k in durable if k[:len(dkeys)] == dkeys]:
            del durable[k]
        for k in [k for k in durable if k[:n] == keys]:
            knames, node = durable.pop(k)
            durable[dkeys + k[n:]] = (dnames + knames[n:], node)


def _survivor(node: Inode, kept: int) -> bytes:
    """Synced data plus, with torn writes, the first kept//2 unsynced writes and half of the next if kept is odd."""
    if node.is_dir:
        return b""
    if kept >= 2 * len(node.unsynced):
        return bytes(node.data)
    data = bytearray(node.synced)
    for i, op in enumerate(node.unsynced[: (kept + 1) // 2]):
        torn = kept % 2 == 1 and i == kept // 2
        if op[0] == "t":
            if not torn:
                del data[op[1]:]
            continue
        _tag, pos, chunk = op
        if torn:
            chunk = chunk[: len(chunk) // 2]
        if pos > len(data):
            data.extend(b"\0" * (pos - len(data)))
        data[pos:pos + len(chunk)] = chunk
    return bytes(data)


def _flag_text(flags: int) -> str:
    acc = flags & (os.O_RDONLY | os.O_WRONLY | os.O_RDWR)
    text = {os.O_RDONLY: "r", os.O_WRONLY: "w", os.O_RDWR: "rw"}.get(acc, "?")
    for bit, tag in ((os.O_CREAT, "c"), (os.O_EXCL, "x"), (os.O_TRUNC, "t"), (os.O_APPEND, "a")):
        if flags & bit:
            text += tag
    return text

__racecheck_engine__ = True  # the fake is part of the engine: never instrumented itself
