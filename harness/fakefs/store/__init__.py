"""The fake filesystem's store, one part per concern:

  * ``core``: ``Store``, the filesystem of one run: its state, the scheduling point and faults of each operation,
    sync, the power loss, inspection (files, open handles);
  * ``paths``: path resolution (components, ``.``/``..``, trailing slashes, device names, name and path limits);
  * ``namespace_ops``: remove, rename, mkdir, rmdir, listdir, stat, chmod, utime;
  * ``handle_ops``: open and the operations on an open file description (read, write, seek, truncate, fsync,
    fstat, close);
  * ``durability``: the journal, the committed namespace and what a power loss keeps;
  * ``nodes``: inodes, open file descriptions and their ``stat``.
"""

from __future__ import annotations

from racecheck.fakefs.store.core import Store, known_roots
from racecheck.fakefs.store.nodes import FD_BASE, Handle, Inode, stat_result

__all__ = ["FD_BASE", "Handle", "Inode", "Store", "known_roots", "stat_result"]

__racecheck_engine__ = True  # the fake is part of the engine: never instrumented itself
