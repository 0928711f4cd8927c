"""Which store a call goes to: the run's store for paths under its mount root, else the real OS.

Decided at call time, never at patch time, so one instrumented module serves controlled threads (fake) and
uncontrolled ones (real) side by side. Outside any run, only the fsspec adapter uses a store (a process-global
default one); os-level stand-ins always fall through to the real OS there.
"""

from __future__ import annotations

import os
import posixpath
from typing import Any

from racecheck.fakefs.spec import FakeFS
from racecheck.fakefs.store import FD_BASE, Store
from racecheck.runtime import current_run, real_allocate_lock

_default_lock = real_allocate_lock()
_default: Store | None = None


def default_store() -> Store:
    """The process-global store used by racefs:// outside a controlled run (standalone use)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = Store(FakeFS())
        return _default


def reset_default_store(spec: FakeFS | None = None) -> Store:
    """Start the standalone store afresh (tests, notebooks)."""
    global _default
    with _default_lock:
        _default = Store(spec or FakeFS())
        return _default


def install_default_store(store: Store) -> Store:
    """Make ``store`` the standalone one (e.g. a run's store, to inspect or continue it outside the run)."""
    global _default
    with _default_lock:
        _default = store
        return store


def run_store() -> Store | None:
    """The store mounted in the calling thread's run, or None."""
    run = current_run()
    if run is None:
        return None
    return run.resources.get("fakefs")


def current_store() -> Store:
    """The run's store inside a run with a fake filesystem, else the process-global default store."""
    return run_store() or default_store()


def normalize(path: str) -> str:
    norm = posixpath.normpath(path)
    if norm.startswith("//"):
        norm = "/" + norm.lstrip("/")
    return norm


def target(path: Any) -> tuple[Store, str] | None:
    """(store, path) when ``path`` is under the mount root of the calling thread's run.

    The path is returned as spelled (only repeated slashes collapsed): the store resolves ``.``, ``..`` and a
    trailing slash component by component as the OS does, so ``x/../a`` and ``a/`` fail where they fail. A path
    that climbs out of the mount through ``..`` belongs to the real OS, as it would at a real mount point."""
    store = run_store()
    if store is None or path is None or isinstance(path, int):
        return None
    try:
        p = os.fspath(path)
    except TypeError:
        return None
    if not isinstance(p, str) or not p.startswith("/"):
        return None
    if "//" in p:
        p = "/" + "/".join(x for x in p.split("/") if x) + ("/" if p.endswith("/") and p.strip("/") else "")
    root = store.root
    if p == root or p.startswith(root + "/"):
        if "/.." in p:
            norm = normalize(p)
            if norm != root and not norm.startswith(root + "/"):
                return None
        return store, p
    return None


def fd_store(fd: Any) -> Store | None:
    """The store owning fake descriptor ``fd`` (run store first, then the standalone one), or None."""
    if not isinstance(fd, int) or fd < FD_BASE:
        return None
    store = run_store()
    if store is not None and fd in store.fds:
        return store
    if _default is not None and fd in _default.fds:
        return _default
    return None

__racecheck_engine__ = True  # the fake is part of the engine: never instrumented itself
