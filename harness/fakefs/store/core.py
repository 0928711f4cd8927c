"""The store's core: the state every operation of one run's filesystem shares, and each operation's protocol with
the run.

Why its own model: the fake must (a) make every operation a scheduling point of the controlled scheduler, before
its effect, (b) fail like the imitated OS (sharing violations, orphaned inodes), and (c) know what a power loss
keeps. The store holds all state itself (never on fsspec instances, which fsspec caches per thread) and guards it
with a real lock that is never held across a scheduling point, so the scheduler can park a thread at any point.

``StoreCore`` is that state (the tree's root, open descriptors, the journal, numbering of inodes, descriptors and
temporary names) and the protocol an operation follows, which the operation components (``NamespaceOps``,
``HandleOps``) and ``Store`` itself are handed:

  * ``enter`` / ``enter_handle``: the scheduling point, with what the operation declares it touches (its
    accesses), then the faults drawn for it; both before any effect;
  * ``narrow``: the operation found out it touched less than it declared;
  * under ``lock``, the effect, with ``journal``/``unlink`` for namespace changes, ``new_inode``/``next_fd``;
  * ``leave``: the operation is logged and a power loss drawn for it happens.
"""

from __future__ import annotations

import time
from typing import Any

from racecheck.fakefs.faults import FaultPlan
from racecheck.fakefs.semantics import semantics_for
from racecheck.fakefs.spec import FakeFS
from racecheck.fakefs.store.accesses import FAULTS, handle_key, rekey
from racecheck.fakefs.store.durability import Durability
from racecheck.fakefs.store.nodes import FD_BASE, Handle, Inode
from racecheck.fakefs.store.paths import PathResolver
from racecheck.runtime import RunContract, current_run, real_allocate_lock
from racecheck.runtime.access import NOTHING, Access, file_access

_roots: tuple[str, ...] = ()


def _note_root(root: str) -> None:
    """Remember a mount root (every store does): the real-disk guard only looks closer at paths under one."""
    global _roots
    if root not in _roots:
        _roots = (*_roots, root)


def known_roots() -> tuple[str, ...]:
    """Every mount root a store was created with in this process (a cheap prefilter for the audit hook)."""
    return _roots


class StoreCore:
    """The shared state of one store and the protocol of its operations. Paths are normalized absolute virtual
    paths under ``spec.root``.

    Fixed for the store's life: ``spec``, ``sem``, ``root``, ``win``, ``newest_first``, ``paths``, ``faults``,
    ``lock``, ``fds``, ``log``, ``durability`` (the dict, the list and the durability object change in place).
    Replaced by a power loss or ``adopt``: ``root_inode``; counted up by a power loss: ``generation``."""

    def __init__(self, spec: FakeFS | None = None) -> None:
        self.spec = spec or FakeFS()
        self.sem = semantics_for(self.spec.semantics)
        self.newest_first = self.spec.newest_first(self.sem.newest_first)
        self.root = self.spec.root
        _note_root(self.root)
        self.faults = FaultPlan(self.spec)
        self.paths = PathResolver(self.sem, self.root)
        self.win = self.paths.win
        self.lock = real_allocate_lock()
        self._ino = 0
        self._fd = FD_BASE
        self._tmp = 0
        self.generation = 0
        self.fds: dict[int, Handle] = {}
        self.log: list[str] = []
        self.root_inode = self.new_inode(True, self.root)
        self.durability = Durability(self.root_inode)

    def adopt(self, other: StoreCore) -> None:
        """Take over ``other``'s tree, numbering and durability state (same semantics and root required)."""
        if other.spec.semantics != self.spec.semantics or other.root != self.root:
            raise ValueError("adopt() needs a store with the same semantics and root")
        with self.lock:
            self.root_inode, self._ino, self._tmp = other.root_inode, other._ino, other._tmp
            self.durability.adopt(other.durability)
            rekey(self.root_inode, self.root)

    # ----------------------------------------------------------------------------------- the run's protocol
    def run(self) -> Any | None:
        """The calling thread's run when this store is the run's, else None (no point, no faults)."""
        run = current_run()
        if run is not None:
            store = run.resources.get("fakefs")  # a ``Store``, whose core this is or not
            if store is not None and store.core is self:
                return run
        return None

    def enter(self, kind: str, text: str, access: tuple[Access, ...] = NOTHING) -> Any | None:
        """The scheduling point of an operation, with what it touches (``accesses``), then the faults drawn for
        it; both before any effect. Called only from the store's own operations, so two engine frames lie between
        ``schedule`` and the caller's code."""
        run = self.run()
        if run is not None:
            faults = self.faults.active
            run.schedule("fs." + text, access=self.with_faults(access), skip=2)
            if faults:
                self.faults.before(run, kind, text, self.used() if self.spec.enospc else 0)
        return run

    def with_faults(self, access: tuple[Access, ...]) -> tuple[Access, ...]:
        """What an operation touches, with the faults' counter when faults are on (drawn by counting every
        thread's operations, so then every operation conflicts with every other)."""
        return access + FAULTS if self.faults.active else access

    def enter_handle(self, kind: str, text: str, access_kind: str, handle: Handle,
                     namespace: bool = False) -> Any | None:
        """``enter`` for an operation through ``handle``: it touches the file under the name its inode has when
        the operation runs, which a rename by another thread may have changed while this one waited."""
        run = self.run()
        if run is not None:
            win = self.win
            key = handle_key(handle, self.root, win)
            access = file_access(access_kind, key, namespace, self.root)
            faults = self.faults.active
            run.schedule("fs." + text, access=self.with_faults(access), skip=2)
            now = handle_key(handle, self.root, win)
            if now != key:
                run.touch(file_access(access_kind, now, namespace, self.root))
            if faults:
                self.faults.before(run, kind, text, self.used() if self.spec.enospc else 0)
        return run

    def narrow(self, run: RunContract | None, access: tuple[Access, ...]) -> None:
        """The operation found out it did less than its point declared (a mkdir whose directory was there, a remove
        of a name that was not): its step touched only ``access`` (``Run.narrow``), plus the faults' counter."""
        if run is not None:
            run.narrow(self.with_faults(access))

    def leave(self, run: RunContract | None, kind: str, text: str) -> None:
        """The operation's effect is done: log it, and lose power now if the run drew a crash for it."""
        self.log.append(text)
        if run is not None and self.faults.crash_kinds and self.faults.crash_due(kind):
            self.prepare_crash(run)
            run.crash(f"power loss after fs.{text}")

    def prepare_crash(self, run: RunContract) -> None:
        """Draw, in the crashing thread, what the power loss keeps: a journal prefix and (torn) file data."""
        with self.lock:
            pending = len(self.durability.journal)
            dirty = [n for n in self.all_inodes() if n.unsynced and not n.is_dir]
        self.durability.plan_crash(run, pending, dirty, self.spec.torn_writes)

    # ------------------------------------------------------------------------------------ numbering, time
    def now(self) -> float:
        """The time an operation stamps: the run's virtual clock inside a run, else the real one."""
        run = current_run()
        return float(run.now()) if run is not None else time.time()

    def new_inode(self, is_dir: bool, key: str | None = None) -> Inode:
        self._ino += 1
        return Inode(self._ino, is_dir, 0.0 if self._ino == 1 else self.now(), key)

    def next_fd(self) -> int:
        """A fresh descriptor number (under ``lock``)."""
        self._fd += 1
        return self._fd

    def next_temp(self) -> int:
        """A fresh temporary-name number (under ``lock``)."""
        self._tmp += 1
        return self._tmp

    # ------------------------------------------------------------------------------------------ the tree
    def used(self) -> int:
        """Bytes of file data the store holds, open orphans included (the disk-full faults' measure)."""
        return sum(len(node.data) for node in self._reachable())

    def all_inodes(self) -> list[Inode]:
        """Every inode reachable from the root or an open descriptor, in inode order."""
        return sorted(self._reachable(), key=lambda n: n.ino)

    def _reachable(self) -> list[Inode]:
        nodes, stack, seen = [], [self.root_inode] + [h.inode for h in self.fds.values()], set()
        while stack:
            node = stack.pop()
            if node.ino in seen:
                continue
            seen.add(node.ino)
            nodes.append(node)
            stack.extend(child for _, child in node.entries.values())
        return nodes

    def journal(self, entry: tuple, *dirs: Inode) -> None:
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

    def unlink(self, parent: Inode, key: str, path: str) -> None:
        """Remove the entry ``key`` of ``parent`` (at canonical ``path``): the inode lives on while open."""
        _, inode = parent.entries.pop(key)
        inode.linked = False
        parent.mtime = self.now()
        self.journal(("unlink", path), parent)


__racecheck_engine__ = True  # the fake is part of the engine: never instrumented itself
