"""``FakeFS``: the per-exploration description of the fake filesystem (semantics, mount root, faults).

It is a frozen value, not a store: ``explore(..., fs=FakeFS(...))`` builds a fresh store from it for every
schedule, so no state leaks between runs and the same token always meets the same filesystem.
"""

from __future__ import annotations

import posixpath
from collections.abc import Collection
from dataclasses import dataclass

from racecheck.fakefs.semantics import POSIX, WINDOWS

# The store's operation kinds, as they appear after "fs." in trace texts: the vocabulary of ``crash_ops=`` and
# ``eio=``. A table of its own, not derived from the stand-ins' (``realdisk.Calls``): many functions are one store
# operation (``exists``, ``getsize`` and ``stat`` are "stat"; ``os.write`` and a file object's write are "write"),
# and "sync", "read" through a handle have no path. The kinds the store's operations declare are checked against it
# (tests/fakefs/test_operation_tables.py).
MUTATING_OPS = frozenset(
    {"open", "write", "close", "fsync", "remove", "rename", "mkdir", "rmdir", "truncate", "chmod", "utime", "sync"}
)
READ_OPS = frozenset({"read", "stat", "listdir"})
ALL_OPS = MUTATING_OPS | READ_OPS
LISTING_ORDERS = ("native", "newest-first", "oldest-first")


@dataclass(frozen=True)
class FakeFS:
    """Configuration of the fake filesystem of one exploration.

    semantics      "posix" or "windows" (sharing violations, winerror, case-insensitive names).
    root           virtual absolute path where the store is mounted for os-level code; racefs://a/b is <root>/a/b.
    crash          draw a crash point: power loss right after the effect of the k-th eligible operation,
                   k = run.choose(fault_window + 1, "fs.crash") (0 = no crash).
    crash_ops      kinds of operation after which a crash may happen (default: every mutating operation).
    fault_window   how many eligible operations ahead a drawn fault may land (bounds the choice).
    eio            True, or a collection of kinds: the k-th eligible operation fails with EIO before its effect,
                   k = run.choose(fault_window + 1, "fs.eio"); True means {"write", "fsync", "read"}.
    enospc_quota   bytes of file data the store holds; a write past it fails with ENOSPC (deterministic).
    enospc         draw the quota instead: the k-th write finds the disk full (run.choose(..., "fs.enospc")).
    latency        virtual delays (seconds); before each operation run.choose(len + 1, "fs.latency") picks
                   0 = none or one of them, and the thread sleeps that long in virtual time.
    torn_writes    at power loss, unsynced writes of a file survive in order up to a chosen one, which may be
                   half written; without it unsynced data is simply lost.
    capture_tempdir inside a run, tempfile calls without dir= create their files in ``tmpdir`` in the store
                   (default <root>/.tmp) instead of the real /tmp, so atomic-save code stays in the fake.
    listing_order  the order directories list in: "native" (posix: tmpfs's, newest first, as Linux 6.x lists it;
                   windows: creation order), "newest-first" or "oldest-first" (creation order, as some kernels'
                   tmpfs lists), for code whose behaviour depends on it.
    """

    semantics: str = POSIX
    root: str = "/racefs"
    crash: bool = False
    crash_ops: Collection[str] | None = None
    fault_window: int = 64
    eio: bool | Collection[str] = False
    enospc_quota: int | None = None
    enospc: bool = False
    latency: tuple[float, ...] = ()
    torn_writes: bool = False
    capture_tempdir: bool = True
    tmpdir: str | None = None
    listing_order: str = "native"

    def __post_init__(self) -> None:
        if self.semantics not in (POSIX, WINDOWS):
            raise ValueError(f"semantics must be 'posix' or 'windows', not {self.semantics!r}")
        root = posixpath.normpath(self.root)
        if not root.startswith("/") or root == "/":
            raise ValueError(f"root must be an absolute path below '/', not {self.root!r}")
        object.__setattr__(self, "root", root)
        if self.listing_order not in LISTING_ORDERS:
            raise ValueError(f"listing_order must be one of {', '.join(LISTING_ORDERS)}, not {self.listing_order!r}")
        if isinstance(self.latency, (int, float)):
            object.__setattr__(self, "latency", (float(self.latency),))
        else:
            object.__setattr__(self, "latency", tuple(float(x) for x in self.latency))
        unknown = set(self.crash_ops or ()) - ALL_OPS
        if isinstance(self.eio, Collection) and not isinstance(self.eio, (str, bool)):
            unknown |= set(self.eio) - ALL_OPS
        if unknown:
            raise ValueError(f"unknown operation kinds {sorted(unknown)}; known: {sorted(ALL_OPS)}")

    def config_key(self) -> str:
        """Identity of this configuration for schedule tokens: a token replays only on the same filesystem."""
        fields = ("semantics", "root", "crash", "crash_ops", "fault_window", "eio", "enospc_quota", "enospc",
                  "latency", "torn_writes", "capture_tempdir", "tmpdir")
        parts = []
        for name in fields:
            value = getattr(self, name)
            if isinstance(value, (set, frozenset)):
                value = sorted(value)
            parts.append(f"{name}={value!r}")
        if self.listing_order != "native":  # added later: the default leaves the keys of earlier tokens as they were
            parts.append(f"listing_order={self.listing_order!r}")
        return "FakeFS(" + ", ".join(parts) + ")"

    def newest_first(self, semantics_default: bool) -> bool:
        """Whether directories list their newest entry first, given what the semantics' OS does natively."""
        return semantics_default if self.listing_order == "native" else self.listing_order == "newest-first"

    @property
    def temp_root(self) -> str:
        return self.tmpdir or posixpath.join(self.root, ".tmp")

    @property
    def crash_kinds(self) -> frozenset:
        return frozenset(self.crash_ops) if self.crash_ops is not None else MUTATING_OPS

    @property
    def eio_kinds(self) -> frozenset:
        if self.eio is True:
            return frozenset({"write", "fsync", "read"})
        if not self.eio:
            return frozenset()
        return frozenset(self.eio)


def as_spec(fs: object) -> FakeFS:
    """Accept what ``explore(fs=...)`` accepts: "posix", "windows", or a FakeFS."""
    if isinstance(fs, FakeFS):
        return fs
    if isinstance(fs, str):
        return FakeFS(semantics=fs)
    if fs is True:
        return FakeFS()
    raise TypeError(f"fs= expects 'posix', 'windows' or a FakeFS, not {fs!r}")

__racecheck_engine__ = True  # the fake is part of the engine: never instrumented itself
