"""The fake filesystem's store, one part per concern:

  * ``filesystem``: ``Store``, the filesystem of one run: its parts, every operation under one name, sync, the
    power loss, inspection (files, open handles);
  * ``core``: ``StoreCore``, the state the operations share and each operation's protocol with the run (its
    scheduling point and accesses, faults, narrowing, the journal);
  * ``paths``: path resolution (components, ``.``/``..``, trailing slashes, device names, name and path limits);
  * ``namespace_ops``: remove, rename, mkdir, rmdir, listdir, stat, chmod, utime;
  * ``handle_ops``: open and the operations on an open file description (read, write, seek, truncate, fsync,
    fstat, close);
  * ``accesses``: what each operation touches;
  * ``durability``: the journal, the committed namespace and what a power loss keeps;
  * ``nodes``: inodes, open file descriptions and their ``stat``.
"""

from __future__ import annotations

from racecheck.fakefs.store.core import known_roots
from racecheck.fakefs.store.filesystem import Store
from racecheck.fakefs.store.nodes import FD_BASE, Handle, Inode, stat_result

__all__ = ["FD_BASE", "Handle", "Inode", "Store", "known_roots", "stat_result"]

__racecheck_engine__ = True  # the fake is part of the engine: never instrumented itself
