"""``Store``: the filesystem of one run, made of its parts, and what is done to it as a whole.

A store is three objects, each with its own state and a narrow interface: ``StoreCore`` (core.py) holds the state
every operation shares and the protocol an operation follows with the run (its point, accesses, faults, narrowing,
the journal); ``NamespaceOps`` (namespace_ops.py) and ``HandleOps`` (handle_ops.py) are the operations, each handed
the core. ``Store`` holds them, answers for the whole filesystem (sync, the power loss, temporary names, adopting
a prepared tree, inspection for oracles), and offers every operation under one name: the stand-ins, the fsspec
adapter and the tests call ``store.rename(...)``, ``store.h_write(...)``.

Those operation names are the parts' own bound methods, set on each store when it is made, not methods that
forward: a call reaches the operation with no frame in between, as when the operations were the store's own (the
location walk of every scheduling point counts on two engine frames between ``schedule`` and the caller).
"""

from __future__ import annotations

import hashlib
import posixpath
from collections.abc import Callable
from typing import Any

from racecheck.fakefs.spec import FakeFS
from racecheck.fakefs.store.accesses import TEMP_NAMES, rekey
from racecheck.fakefs.store.core import StoreCore
from racecheck.fakefs.store.durability import sync_data
from racecheck.fakefs.store.handle_ops import HandleOps
from racecheck.fakefs.store.namespace_ops import NamespaceOps
from racecheck.fakefs.store.nodes import Inode
from racecheck.runtime import RunContract


class Store:
    """The filesystem of one run. Paths are normalized absolute virtual paths under ``spec.root``.

    ``core``, ``namespace`` and ``handles`` are its parts; ``spec``, ``sem``, ``root``, ``paths``, ``faults``,
    ``fds``, ``log``, ``newest_first`` and ``durability`` the core's, fixed for the store's life; ``root_inode``
    and ``generation`` are read from the core, since a power loss changes them."""

    # The operations, each the bound method of the part that does it (see the module docstring).
    remove: Callable[..., None]
    rename: Callable[..., None]
    mkdir: Callable[..., None]
    rmdir: Callable[..., None]
    listdir: Callable[..., list[tuple[str, Inode]]]
    stat: Callable[..., Any]
    chmod: Callable[..., None]
    utime: Callable[..., None]
    open: Callable[..., Any]
    truncate_path: Callable[..., None]
    h_write: Callable[..., int]
    h_read: Callable[..., bytes]
    h_seek: Callable[..., int]
    h_truncate: Callable[..., int]
    h_fsync: Callable[..., None]
    h_fstat: Callable[..., Any]
    h_close: Callable[..., None]
    dir_path: Callable[[int], str]

    def __init__(self, spec: FakeFS | None = None) -> None:
        core = self.core = StoreCore(spec)
        self.spec, self.sem, self.root, self.paths = core.spec, core.sem, core.root, core.paths
        self.faults, self.fds, self.log, self.newest_first = core.faults, core.fds, core.log, core.newest_first
        self.durability = core.durability
        ns = self.namespace = NamespaceOps(core)
        self.remove, self.rename, self.mkdir, self.rmdir = ns.remove, ns.rename, ns.mkdir, ns.rmdir
        self.listdir, self.stat, self.chmod, self.utime = ns.listdir, ns.stat, ns.chmod, ns.utime
        hs = self.handles = HandleOps(core)
        self.open, self.truncate_path, self.dir_path = hs.open, hs.truncate_path, hs.dir_path
        self.h_write, self.h_read, self.h_seek, self.h_truncate = hs.h_write, hs.h_read, hs.h_seek, hs.h_truncate
        self.h_fsync, self.h_fstat, self.h_close = hs.h_fsync, hs.h_fstat, hs.h_close

    @property
    def root_inode(self) -> Inode:
        return self.core.root_inode

    @property
    def generation(self) -> int:
        return self.core.generation

    def adopt(self, other: Store) -> None:
        """Take over ``other``'s tree and durability state (same semantics required): lets a run start from a
        prepared filesystem, e.g. fixtures built on the standalone store before an exploration."""
        self.core.adopt(other.core)

    def temp_name(self, directory: str, prefix: str = "tmp", suffix: str = "") -> str:
        """Deterministic temporary names (real tempfile names are random and would break replay). Which name a
        thread gets depends on the order of every thread's calls: the step that asks touches the counter."""
        core = self.core
        run = core.run()
        if run is not None:
            run.touch(TEMP_NAMES)
        with core.lock:
            return posixpath.join(directory, f"{prefix}{core.next_temp():08d}{suffix}")

    # ---------------------------------------------------------------------------------------- durability
    def sync(self) -> None:
        """sync(2): everything written so far becomes durable (also a handy way to set up a durable state)."""
        core = self.core
        run = core.enter("sync", "sync")
        with core.lock:
            core.durability.commit_all()
            for node in core.all_inodes():
                sync_data(node)
        core.leave(run, "sync", "sync")

    def prepare_crash(self, run: RunContract) -> None:
        """Draw, in the crashing thread, what the power loss keeps: a journal prefix and (torn) file data."""
        self.core.prepare_crash(run)

    def power_loss(self) -> None:
        """Reduce the store to what survives a power loss (see durability.py); handles die with it."""
        core = self.core
        with core.lock:
            core.generation += 1
            for handle in list(core.fds.values()):
                handle.closed = True
            core.fds.clear()
            core.root_inode = core.durability.survive()
            rekey(core.root_inode, core.root)
            core.log.append("power loss")

    # -------------------------------------------------------------------------------- introspection
    def files(self) -> list[tuple[str, int, str]]:
        """Sorted (path, size, sha256 hex[:16]) of every reachable regular file: for oracles and traces."""
        out = []
        with self.core.lock:
            stack = [(self.root, self.core.root_inode)]
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
        with self.core.lock:
            try:
                inode = self.paths.resolve(self.core.root_inode, path, path).inode
            except OSError:
                return None
            return None if inode is None or inode.is_dir else bytes(inode.data)

    def open_handles(self) -> list[tuple[str, str, bool]]:
        """(path at open, mode, unlinked?) of every open handle, in opening order."""
        with self.core.lock:
            return [(h.path, h.mode, not h.inode.linked) for h in sorted(self.fds.values(), key=lambda h: h.fd)]


__racecheck_engine__ = True  # the fake is part of the engine: never instrumented itself
