"""What differs between the supported Pythons (3.10-3.13), decided in one place from ``python_version()``.

The fake imitates the *running* interpreter: ``NamedTemporaryFile`` closing a file that is already gone raises
on 3.10/3.11 and is silent from 3.12; ``pathlib`` does its I/O through ``_NormalAccessor`` (captured functions)
on 3.10, through its module globals on 3.11/3.12 and through ``pathlib._local`` on 3.13. Tests exercise every
branch by patching ``python_version``.

It also holds the guard that keeps mounted paths off the real disk: an audit hook (PEP 578) that refuses any
real file operation on a path under the mount root of the calling thread's run. The stand-ins never call the
real OS for such paths, so the hook only fires when some code path was not brought under control (a module that
was not instrumented, a C extension opening by name): it raises instead of silently writing to the real disk.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from racecheck.fakefs import os_calls as fos
from racecheck.fakefs.mount import run_store
from racecheck.fakefs.store import known_roots


def python_version() -> tuple[int, int]:
    """(major, minor) of the interpreter whose behaviour the fake imitates (the running one)."""
    return sys.version_info[:2]


def pathlib_modules() -> tuple[str, ...]:
    """Modules holding pathlib's I/O: instrumenting their ``os``/``io`` globals routes Path methods (3.13's
    ``Path.glob`` lists directories through the ``glob`` module, so it is one of them; it serves ``glob.glob``
    on mounted paths on every version too)."""
    return ("pathlib", "pathlib._local", "glob") if python_version() >= (3, 13) else ("pathlib", "glob")


_accessor_installed = False


def install_pathlib_accessor() -> bool:
    """3.10 only: ``pathlib._NormalAccessor`` captured ``os.stat``, ``io.open``, ... when the class was created,
    so swapping module globals never reaches them. Give ``Path`` an accessor whose methods decide at call time:
    the store for mounted paths inside a run, the very same real functions otherwise. Idempotent."""
    global _accessor_installed
    if _accessor_installed:
        return True
    import pathlib

    normal = getattr(pathlib, "_NormalAccessor", None)
    if normal is None or not hasattr(pathlib.Path, "_accessor"):
        return False
    overrides = {"stat": fos.stat, "open": fos.fake_open, "listdir": fos.listdir, "scandir": fos.scandir,
                 "chmod": fos.chmod, "mkdir": fos.mkdir, "unlink": fos.remove, "rmdir": fos.rmdir,
                 "rename": fos.rename, "replace": fos.replace, "readlink": fos.readlink,
                 "link": fos.os_facade.link, "symlink": fos.os_facade.symlink}
    ns = {name: staticmethod(fn) for name, fn in overrides.items() if hasattr(normal, name)}

    def touch(self: Any, path: Any, mode: int = 0o666, exist_ok: bool = True) -> None:
        if exist_ok:
            try:
                fos.utime(path, None)
            except OSError:
                pass
            else:
                return
        flags = os.O_CREAT | os.O_WRONLY | (0 if exist_ok else os.O_EXCL)
        fos.close(fos.os_open(path, flags, mode))

    ns["touch"] = touch
    ns["__doc__"] = "pathlib's accessor, routing mounted paths of a racecheck run to the fake filesystem."
    accessor = type("_RacecheckAccessor", (normal,), ns)()
    pathlib.Path._accessor = accessor
    pathlib._normal_accessor = accessor
    _accessor_installed = True
    return True


_globber_installed = False


def install_glob_stand_ins() -> bool:
    """3.13+: ``Path.glob`` lists directories through ``glob._StringGlobber``, whose ``lstat``/``scandir`` are
    ``os`` functions captured when the class was created. Give them call-time dispatch (the store for mounted
    paths inside a run, the same real functions otherwise). Idempotent."""
    global _globber_installed
    if _globber_installed:
        return True
    import glob

    globber = getattr(glob, "_StringGlobber", None)
    if globber is None:
        return False
    globber.lstat = staticmethod(fos.lstat)
    globber.scandir = staticmethod(fos.scandir)
    _globber_installed = True
    return True


def install_captured_io() -> None:
    """The version-specific stand-ins for I/O functions that stdlib classes captured at import time."""
    if python_version() < (3, 11):
        install_pathlib_accessor()
    if python_version() >= (3, 13):
        install_glob_stand_ins()


def named_temporary_close_raises_if_gone() -> bool:
    """3.10/3.11 unlink at close without catching FileNotFoundError; 3.12+ ignore it."""
    return python_version() < (3, 12)


def has_delete_on_close() -> bool:
    """``NamedTemporaryFile(delete_on_close=...)`` exists from 3.12."""
    return python_version() >= (3, 12)


# ------------------------------------------------------------------------------------------ real-disk guard
class UnservedPathError(RuntimeError):
    """A mounted path reached the real OS: the code that did it is not under the fake's control."""


# Audit events of real file operations and the positions of their path arguments.
_EVENTS = {"open": (0,), "os.remove": (0,), "os.rename": (0, 1), "os.mkdir": (0,), "os.rmdir": (0,),
           "os.listdir": (0,), "os.scandir": (0,), "os.truncate": (0,), "os.chmod": (0,), "os.utime": (0,),
           "os.link": (0, 1), "os.symlink": (0, 1), "os.chown": (0,), "os.chflags": (0,),
           "os.setxattr": (0,), "os.removexattr": (0,), "os.listxattr": (0,), "os.getxattr": (0,)}
_hook_installed = False


def _guard(event: str, args: tuple) -> None:
    """The audit hook. Fast path: an event that is not a file operation, or whose paths do not start with any
    mount root ever created in this process, returns after a dict lookup and a prefix test."""
    positions = _EVENTS.get(event)
    if positions is None:
        return
    prefixes = known_roots()
    if not prefixes:
        return
    for i in positions:
        if i >= len(args):
            continue
        path = args[i]
        if isinstance(path, bytes):
            try:
                path = os.fsdecode(path)
            except (UnicodeDecodeError, TypeError):
                continue
        if not isinstance(path, str):
            continue
        if path[:2] == "//":
            path = "/" + path.lstrip("/")
        if not path.startswith(prefixes):
            continue
        store = run_store()
        if store is None:
            return
        root = store.root
        if path == root or path.startswith(root + "/"):
            raise UnservedPathError(
                f"{event} of {path!r} reached the real OS from {_caller()}: that code is not under racecheck's "
                f"fake filesystem (instrument= its module); refused so nothing under {root} touches the real disk")


def _caller() -> str:
    frame = sys._getframe(2)
    while frame is not None and frame.f_globals.get("__racecheck_engine__"):
        frame = frame.f_back
    if frame is None:
        return "?"
    return f"{frame.f_globals.get('__name__', '?')}:{frame.f_lineno}"


def install_guard() -> None:
    """Install the audit hook once per process (hooks cannot be removed; outside runs it returns at once)."""
    global _hook_installed
    if not _hook_installed:
        sys.addaudithook(_guard)
        _hook_installed = True


__racecheck_engine__ = True  # the fake is part of the engine: never instrumented itself
