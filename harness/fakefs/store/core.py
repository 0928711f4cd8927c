"""The store: one in-memory filesystem shared by every thread of a run, with a crash-consistency model.

Why its own model: the fake must (a) make every operation a scheduling point of the controlled scheduler, before
its effect, (b) fail like the imitated OS (sharing violations, orphaned inodes), and (c) know what a power loss
keeps. The store holds all state itself (never on fsspec instances, which fsspec caches per thread) and guards it
with a real lock that is never held across a scheduling point, so the scheduler can park a thread at any point.

``Store`` is composed of one part per concern: ``PathResolver`` (paths.py) walks paths, ``NamespaceOps``
(namespace_ops.py) and ``HandleOps`` (handle_ops.py) are the operations, ``Durability`` (durability.py) is what a
power loss keeps. This module holds the shared state and plumbing: the scheduling point and fault draw of each
operation, inode and descriptor numbering, journaling a change, sync, the power loss and the inspection helpers.
"""

from __future__ import annotations

import hashlib
import posixpath
import time
from typing import Any

from racecheck.fakefs.faults import FaultPlan
from racecheck.fakefs.semantics import semantics_for
from racecheck.fakefs.spec import FakeFS
from racecheck.fakefs.store.accesses import FAULTS, TEMP_NAMES, handle_key, rekey
from racecheck.fakefs.store.durability import Durability, sync_data
from racecheck.fakefs.store.handle_ops import HandleOps
from racecheck.fakefs.store.namespace_ops import NamespaceOps
from racecheck.fakefs.store.nodes import FD_BASE, Handle, Inode
from racecheck.fakefs.store.paths import PathResolver
from racecheck.runtime import current_run, real_allocate_lock
from racecheck.runtime.access import NOTHING, Access, file_access

_roots: tuple[str, ...] = ()


def _note_root(root: str) -> None:
    """Remember a mount root (every Store does): the real-disk guard only looks closer at paths under one."""
    global _roots
    if root not in _roots:
        _roots = (*_roots, root)


def known_roots() -> tuple[str, ...]:
    """Every mount root a store was created with in this process (a cheap prefilter for the audit hook)."""
    return _roots


class Store(NamespaceOps, HandleOps):
    """The filesystem of one run. Paths are normalized absolute virtual paths under ``spec.root``."""

    def __init__(self, spec: FakeFS | None = None) -> None:
        self.spec = spec or FakeFS()
        self.sem = semantics_for(self.spec.semantics)
        self.newest_first = self.spec.newest_first(self.sem.newest_first)
        self.root = self.spec.root
        _note_root(self.root)
        self.faults = FaultPlan(self.spec)
        self.paths = PathResolver(self.sem, self.root)
        self._lock = real_allocate_lock()
        self._ino = 0
        self._fd = FD_BASE
        self._tmp = 0
        self.generation = 0
        self.fds: dict[int, Handle] = {}
        self.log: list[str] = []
        self.root_inode = self._new_inode(True, self.root)
        self.durability = Durability(self.root_inode)

    def adopt(self, other: Store) -> None:
        """Take over ``other``'s tree and durability state (same semantics required): lets a run start from a
        prepared filesystem, e.g. fixtures built on the standalone store before an exploration."""
        if other.spec.semantics != self.spec.semantics or other.root != self.root:
            raise ValueError("adopt() needs a store with the same semantics and root")
        with self._lock:
            self.root_inode, self._ino, self._tmp = other.root_inode, other._ino, other._tmp
            self.durability.adopt(other.durability)
            rekey(self.root_inode, self.root)

    # ----------------------------------------------------------------------------------------- run plumbing
    def _run(self) -> Any | None:
        run = current_run()
        if run is not None and run.resources.get("fakefs") is self:
            return run
        return None

    def _enter(self, kind: str, text: str, access: tuple[Access, ...] = NOTHING) -> Any | None:
        """The scheduling point of an operation, with what it touches (``accesses``), then the faults drawn for
        it; both before any effect. Called only from this store's own operations, so two engine frames lie between
        ``schedule`` and the caller's code."""
        run = self._run()
        if run is not None:
            faults = self.faults.active
            run.schedule("fs." + text, access=self._with_faults(access), skip=2)
            if faults:
                self.faults.before(run, kind, text, self._used() if self.spec.enospc else 0)
        return run

    def _with_faults(self, access: tuple[Access, ...]) -> tuple[Access, ...]:
        """What an operation touches, with the faults' counter when faults are on (drawn by counting every
        thread's operations, so then every operation conflicts with every other)."""
        return access + FAULTS if self.faults.active else access

    def _enter_handle(self, kind: str, text: str, access_kind: str, handle: Handle,
                      namespace: bool = False) -> Any | None:
        """``_enter`` for an operation through ``handle``: it touches the file under the name its inode has when
        the operation runs, which a rename by another thread may have changed while this one waited."""
        run = self._run()
        if run is not None:
            win = self.paths.win
            key = handle_key(handle, self.root, win)
            access = file_access(access_kind, key, namespace, self.root)
            faults = self.faults.active
            run.schedule("fs." + text, access=self._with_faults(access), skip=2)
            now = handle_key(handle, self.root, win)
            if now != key:
                run.touch(file_access(access_kind, now, namespace, self.root))
            if faults:
                self.faults.before(run, kind, text, self._used() if self.spec.enospc else 0)
        return run

    def _narrow(self, run: Any | None, access: tuple[Access, ...]) -> None:
        """The operation found out it did less than its point declared (a mkdir whose directory was there, a remove
        of a name that was not): its step touched only ``access`` (``Run.narrow``), plus the faults' counter."""
        if run is not None:
            run.narrow(self._with_faults(access))

    def _leave(self, run: Any | None, kind: str, text: str) -> None:
        self.log.append(text)
        if run is not None and self.faults.crash_kinds and self.faults.crash_due(kind):
            self.prepare_crash(run)
            run.crash(f"power loss after fs.{text}")

    def _now(self) -> float:
        run = current_run()
        return float(run.now()) if run is not None else time.time()

    def _new_inode(self, is_dir: bool, key: str | None = None) -> Inode:
        self._ino += 1
        return Inode(self._ino, is_dir, 0.0 if self._ino == 1 else self._now(), key)

    def _win(self) -> bool:
        return self.paths.win

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

    # --------------------------------------------------------------------------- changes to the namespace
    def _journal(self, entry: tuple, *dirs: Inode) -> None:
        """Journal a namespace change just made: ("link", path, inode), ("unlink", path) or ("rename", src, dst),
        paths canonical, ``dirs`` the directories it touched (a directory fsync commits up to its last entry)."""
        op, path, *rest = entry
        top = self.root_inode
        if op == "rename":
            self.durability.record("rename", self.paths.keys(top, path), self.paths.keys(top, rest[0]), dirs)
        elif op == "link":
            self.durability.record("link", self.paths.keys(top, path), rest[0], dirs)
        else:
            self.durability.record(op, self.paths.keys(top, path), None, dirs)

    def _unlink(self, parent: Inode, key: str, path: str) -> None:
        """Remove the entry ``key`` of ``parent`` (at canonical ``path``): the inode lives on while open."""
        _, inode = parent.entries.pop(key)
        inode.linked = False
        parent.mtime = self._now()
        self._journal(("unlink", path), parent)

    def temp_name(self, directory: str, prefix: str = "tmp", suffix: str = "") -> str:
        """Deterministic temporary names (real tempfile names are random and would break replay). Which name a
        thread gets depends on the order of every thread's calls: the step that asks touches the counter."""
        run = self._run()
        if run is not None:
            run.touch(TEMP_NAMES)
        with self._lock:
            self._tmp += 1
            return posixpath.join(directory, f"{prefix}{self._tmp:08d}{suffix}")

    # ---------------------------------------------------------------------------------------- durability
    def sync(self) -> None:
        """sync(2): everything written so far becomes durable (also a handy way to set up a durable state)."""
        run = self._enter("sync", "sync")
        with self._lock:
            self.durability.commit_all()
            for node in self._all_inodes():
                sync_data(node)
        self._leave(run, "sync", "sync")

    def prepare_crash(self, run: Any) -> None:
        """Draw, in the crashing thread, what the power loss keeps: a journal prefix and (torn) file data."""
        with self._lock:
            pending = len(self.durability.journal)
            dirty = [n for n in self._all_inodes() if n.unsynced and not n.is_dir]
        self.durability.plan_crash(run, pending, dirty, self.spec.torn_writes)

    def power_loss(self) -> None:
        """Reduce the store to what survives a power loss (see durability.py); handles die with it."""
        with self._lock:
            self.generation += 1
            for handle in list(self.fds.values()):
                handle.closed = True
            self.fds.clear()
            self.root_inode = self.durability.survive()
            rekey(self.root_inode, self.root)
            self.log.append("power loss")

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
                inode = self.paths.resolve(self.root_inode, path, path).inode
            except OSError:
                return None
            return None if inode is None or inode.is_dir else bytes(inode.data)

    def open_handles(self) -> list[tuple[str, str, bool]]:
        """(path at open, mode, unlinked?) of every open handle, in opening order."""
        with self._lock:
            return [(h.path, h.mode, not h.inode.linked) for h in sorted(self.fds.values(), key=lambda h: h.fd)]


__racecheck_engine__ = True  # the fake is part of the engine: never instrumented itself
