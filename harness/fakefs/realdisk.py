"""Files on the real disk as scheduling points (``files=True``, the default when no ``fs=`` is given).

Without a fake filesystem, what a controlled thread does to a real file still decides races: two threads that
read-modify-write one JSON file lose a record in some orders. So every file operation of a controlled thread is a
scheduling point with the accesses the fake filesystem records for the same operation (``racecheck.runtime.access``:
reads commute; creating, writing, renaming or removing a name conflicts with that name, with the lookups through
it and with a listing of its directory), and then runs on the real disk, unchanged.

One set of stand-ins serves both: the fake filesystem's (``os_calls``, ``shutil_calls``, ``fake_open``, the torch
hook) send a path under the mount root to the store and every other path here, where a controlled thread of a run
watching files makes its point and the real function runs; anyone else gets the real function at once. The
stand-ins reach code exactly as the fake filesystem's do (control by default, the ``"files"`` group of swaps, and
pathlib's and glob's modules instrumented); file objects that ``open`` returns are the real buffered and text
classes over a raw file whose reads, writes and close are points (``realdisk_files``).

A file is named by its absolute path; a path under a temporary directory or file that a controlled thread of the
run created (``tempfile``) is named after it, ``$TMP1/a.json``, so every schedule names it alike.

Determinism: a schedule is fresh only if its files are. With ``check_determinism``, every path a run touches is
fingerprinted the first time the run touches it (a file by inode, size and modification time; a directory only as
there; or absent), and the second run of the same schedule must find what the first found: a file an earlier
schedule left behind or changed is reported, with its path.
"""

from __future__ import annotations

import os
import posixpath
import shutil
import stat as stat_mod
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from racecheck import runtime
from racecheck.control import tempdirs
from racecheck.runtime.access import CREATE, READ, REMOVE, RENAME, WRITE, Access, file_access, listing

__racecheck_engine__ = True

RESOURCE = "files"  # the run's DiskRun, in run.resources
_state = runtime.thread_state
_fspath = os.fspath


class DiskRun:
    """One run's view of the real disk: which descriptor is which file, the temporary names it made, what it
    found at each path first (with ``check_determinism``)."""

    __slots__ = ("fds", "aliases", "found", "paused")

    def __init__(self, fingerprints: bool) -> None:
        self.paused = False  # the engine's own file work on a controlled thread (``unwatched``)
        self.fds: dict[int, str] = {}  # descriptor -> the name of the file it was opened on
        self.aliases: list[tuple[str, str]] = []  # (real temporary path, "$TMPn")
        self.found: dict[str, Any] | None = {} if fingerprints else None  # name -> fingerprint at first touch


def current() -> DiskRun | None:
    """The calling controlled thread's DiskRun, or None (no run, or a run that does not watch files)."""
    run = _state.run
    if run is None:
        return None
    disk = run.resources.get(RESOURCE)
    if disk is None or run.aborting or disk.paused:
        return None
    return disk


@contextmanager
def unwatched() -> Iterator[None]:
    """The calling controlled thread's file operations in the block are the engine's, not the program's: no points,
    no fingerprints (the pytest plugin emptying ``tmp_path`` before each schedule)."""
    run = _state.run
    disk = run.resources.get(RESOURCE) if run is not None else None
    if disk is None:
        yield
        return
    disk.paused = True
    try:
        yield
    finally:
        disk.paused = False


def name_of(disk: DiskRun, path: Any, dir_fd: Any = None) -> tuple[str, str] | None:
    """(name, real absolute path) of ``path`` as this run names it; a descriptor by the file it was opened on; None
    for what is no path (an unknown descriptor, a pipe)."""
    if isinstance(path, int):
        name = disk.fds.get(path)
        return None if name is None else (name, name)
    try:
        p = _fspath(path)
    except TypeError:
        return None
    if isinstance(p, bytes):
        p = os.fsdecode(p)
    if not p.startswith("/"):
        base = disk.fds.get(dir_fd) if dir_fd is not None else None
        p = posixpath.join(base if base is not None and base.startswith("/") else os.getcwd(), p)
    real = posixpath.normpath(p)
    if real.startswith("//"):
        real = "/" + real.lstrip("/")
    for prefix, alias in disk.aliases:
        if real == prefix or real.startswith(prefix + "/"):
            return alias + real[len(prefix):], real
    return real, real


def _accesses(kind: str, name: str, namespace: bool, lists: bool) -> tuple[Access, ...]:
    found = file_access(kind, name, namespace)
    return found + listing(name) if lists else found


def _fingerprint(real: str) -> Any:
    """What a run found at ``real``: a file's inode, size and modification time; a directory is only there (its
    times change with any entry made in it, by anyone: /tmp's with every temporary directory); None: absent."""
    try:
        st = os.lstat(real)
    except OSError:
        return None
    if stat_mod.S_ISDIR(st.st_mode):
        return "directory"
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def enter(disk: DiskRun, op: str, touched: list[tuple[str, str, str, bool, bool]]) -> None:
    """The point of one operation: ``touched`` lists (name, real path, kind, namespace, lists) for each path."""
    access: tuple[Access, ...] = ()
    for name, _real, kind, namespace, lists in touched:
        access += _accesses(kind, name, namespace, lists)
    shown = " -> ".join(name for name, *_ in touched)
    _state.run.schedule(f"fs.{op} {shown}", access=access, skip=1)
    found = disk.found
    if found is not None:
        for name, real, *_ in touched:
            if name not in found:
                found[name] = _fingerprint(real)


def _point(disk: DiskRun, op: str, kind: str, paths: tuple[Any, ...], namespace: bool = False,
           lists: bool = False, dir_fd: Any = None) -> None:
    touched = []
    for path in paths:
        named = name_of(disk, path, dir_fd)
        if named is not None:
            touched.append((named[0], named[1], kind, namespace, lists))
    if touched:
        enter(disk, op, touched)


def _passing(module: Any, attr: str, op: str, kind: str, npaths: int = 1, namespace: bool = False,
             lists: bool = False) -> Callable[..., Any]:
    """``module.attr`` (looked up at call time: a monkeypatch of it, or tempdirs' tracking, is seen), made a point
    on its first ``npaths`` positional paths for a controlled thread of a run that watches files."""

    def call(*args: Any, **kwargs: Any) -> Any:
        disk = current()
        if disk is not None:
            _point(disk, op, kind, args[:npaths], namespace, lists, kwargs.get("dir_fd"))
        return getattr(module, attr)(*args, **kwargs)

    call.__name__ = call.__qualname__ = attr
    call.__doc__ = f"``{module.__name__}.{attr}`` on the real disk, a scheduling point for a controlled thread."
    return call


def _rename(attr: str) -> Callable[..., Any]:
    def call(src: Any, dst: Any, **kwargs: Any) -> Any:
        disk = current()
        if disk is not None:
            touched = []
            for path, fd in ((src, kwargs.get("src_dir_fd")), (dst, kwargs.get("dst_dir_fd"))):
                named = name_of(disk, path, fd)
                if named is not None:
                    touched.append((named[0], named[1], RENAME, True, False))
            if touched:
                enter(disk, attr, touched)
        return getattr(os, attr)(src, dst, **kwargs)

    call.__name__ = call.__qualname__ = attr
    return call


def _copy(attr: str, src_kind: str, dst_kind: str, namespace: bool) -> Callable[..., Any]:
    """A shutil copy, move or tree operation: one point for the whole call. Tree operations write the top of each
    tree (every access below a directory reads it on the way), which orders them with anything inside."""

    def call(src: Any, dst: Any, *args: Any, **kwargs: Any) -> Any:
        disk = current()
        if disk is not None:
            touched = []
            for path, kind, ns in ((src, src_kind, False), (dst, dst_kind, namespace)):
                named = name_of(disk, path)
                if named is not None:
                    touched.append((named[0], named[1], kind, ns, False))
            if touched:
                enter(disk, attr, touched)
        return getattr(shutil, attr)(src, dst, *args, **kwargs)

    call.__name__ = call.__qualname__ = attr
    return call


# ----- descriptors ----------------------------------------------------------------------------------------------------


def os_open(path: Any, flags: int, mode: int = 0o777, *, dir_fd: Any = None) -> int:
    disk = current()
    if disk is None:
        return os.open(path, flags, mode, dir_fd=dir_fd)
    named = name_of(disk, path, dir_fd)
    if named is not None:
        if flags & os.O_CREAT:
            kind, namespace = CREATE, True
        else:
            kind, namespace = (WRITE if flags & os.O_TRUNC else READ), False
        enter(disk, "open", [(named[0], named[1], kind, namespace, False)])
    fd = os.open(path, flags, mode, dir_fd=dir_fd)
    if named is not None:
        disk.fds[fd] = named[0]
    return fd


def _by_fd(attr: str, kind: str | None) -> Callable[..., Any]:
    """``os.attr(fd, ...)``: a point on the file ``fd`` was opened on in this run (``kind`` None: no point, only
    the bookkeeping); any other descriptor passes through."""

    def call(fd: Any, *args: Any) -> Any:
        disk = current()
        if disk is not None and isinstance(fd, int):
            name = disk.fds.get(fd)
            if name is not None and kind is not None:
                enter(disk, attr, [(name, name, kind, False, False)])
        return getattr(os, attr)(fd, *args)

    call.__name__ = call.__qualname__ = attr
    return call


def close(fd: int) -> None:
    disk = current()
    if disk is not None:
        name = disk.fds.pop(fd, None) if isinstance(fd, int) else None
        if name is not None:
            enter(disk, "close", [(name, name, READ, False, False)])
    return os.close(fd)


def fsync(fd: Any) -> None:
    if not isinstance(fd, int) and hasattr(fd, "fileno"):
        fd = fd.fileno()
    return _fsync(fd)


_fsync = _by_fd("fsync", READ)

def writes(path: Any) -> None:
    """A point for code that creates and writes ``path`` out of Python's reach (torch's C++ writer)."""
    disk = current()
    if disk is not None:
        _point(disk, "write", CREATE, (path,), namespace=True)


# ----- temporary files ---------------------------------------------------------------------------------------------


_DIR_AT = {"mkstemp": 2, "mkdtemp": 2, "NamedTemporaryFile": 6}  # the position of each maker's ``dir``


def _temp(attr: str) -> Callable[..., Any]:
    """A tempfile maker: a new name in its directory (which only a listing of it sees), named ``$TMPn`` by the run
    from then on (``tempdirs`` tells ``alias`` of what it made)."""

    def call(*args: Any, **kwargs: Any) -> Any:
        disk = current()
        if disk is not None:
            where = kwargs.get("dir")
            at = _DIR_AT[attr]
            if where is None and len(args) > at:
                where = args[at]
            named = name_of(disk, where if where is not None else tempfile.gettempdir())
            if named is not None:
                enter(disk, attr, [(named[0], named[1], READ, False, False)])
        return getattr(tempfile, attr)(*args, **kwargs)

    call.__name__ = call.__qualname__ = attr
    return call


def alias(kind: str, path: str) -> None:
    """``tempdirs``' callback: a controlled thread made a temporary directory or file at ``path``."""
    disk = current()
    if disk is not None:
        disk.aliases.append((posixpath.normpath(path), f"$TMP{len(disk.aliases) + 1}"))


tempdirs.on_created(alias)


class Calls:
    """The pass-through functions of one module, as the fake filesystem's stand-ins call them for real paths: each
    a point on the real disk with the accesses its row below gives.

    These four tables (``os_calls``, ``path_calls``, ``shutil_calls``, ``tempfile_calls``) are the one list of
    the functions racecheck stands in for: the facades of ``os_calls.py`` and ``shutil_calls.py`` are built from
    them (``stand_ins``) and activation swaps what the facades hold, so a function is taken over by a row here and
    a stand-in of its name there. What the store does for a mounted path is its own vocabulary (``FakeFS``'s
    operation kinds; many of these functions are one store operation, ``stat`` for ``exists`` and ``getsize``)."""

    def stand_ins(self, namespace: dict[str, Any], **other: Any) -> dict[str, Any]:
        """{name: stand-in} for every function this table lists, in its order: ``other[name]`` where the stand-in
        goes by another name or is built (``unlink`` is ``remove``'s), else ``namespace[name]`` (the stand-in
        module's globals). A listed function without a stand-in, or a stand-in for one not listed, fails at
        import."""
        listed = vars(self)
        unlisted = sorted(set(other) - set(listed))
        missing = sorted(name for name in listed if name not in other and not callable(namespace.get(name)))
        if unlisted or missing:
            raise LookupError(f"stand-ins and the real disk's table differ: {missing} have no stand-in, "
                              f"{unlisted} are not listed in racecheck.fakefs.realdisk")
        return {name: other[name] if name in other else namespace[name] for name in listed}


os_calls = Calls()
for _name, _kind, _n, _ns, _lists in (
    ("remove", REMOVE, 1, True, False), ("unlink", REMOVE, 1, True, False), ("rmdir", REMOVE, 1, True, False),
    ("mkdir", CREATE, 1, True, False), ("makedirs", CREATE, 1, True, False),
    ("stat", READ, 1, False, True), ("lstat", READ, 1, False, True), ("access", READ, 1, False, False),
    ("listdir", READ, 1, False, True), ("scandir", READ, 1, False, True), ("walk", WRITE, 1, False, True),
    ("chmod", WRITE, 1, False, False), ("utime", WRITE, 1, False, False), ("truncate", WRITE, 1, False, False),
    ("readlink", READ, 1, False, False), ("listxattr", READ, 1, False, False),
    ("link", CREATE, 2, True, False), ("symlink", CREATE, 2, True, False),
):
    if hasattr(os, _name):
        setattr(os_calls, _name, _passing(os, _name, _name, _kind, _n, _ns, _lists))
os_calls.rename = _rename("rename")
os_calls.replace = _rename("replace")
os_calls.open = os_open
os_calls.close = close
os_calls.fsync = fsync
for _name, _kind in (("read", READ), ("write", WRITE), ("fstat", READ), ("ftruncate", WRITE), ("lseek", None),
                     ("fdatasync", READ)):
    if hasattr(os, _name):
        setattr(os_calls, _name, _by_fd(_name, _kind))
os_calls.sync = os.sync

path_calls = Calls()
for _name in ("exists", "lexists", "isfile", "isdir", "islink", "getsize", "getmtime", "getatime", "getctime"):
    setattr(path_calls, _name, _passing(os.path, _name, _name, READ))
path_calls.samefile = _passing(os.path, "samefile", "samefile", READ, 2)

shutil_calls = Calls()
for _name, _src, _dst, _ns in (
    ("copyfile", READ, CREATE, True), ("copy", READ, CREATE, True), ("copy2", READ, CREATE, True),
    ("copymode", READ, WRITE, False), ("copystat", READ, WRITE, False), ("copytree", WRITE, CREATE, True),
    ("move", RENAME, RENAME, True),
):
    setattr(shutil_calls, _name, _copy(_name, _src, _dst, _ns))
shutil_calls.rmtree = _passing(shutil, "rmtree", "rmtree", REMOVE, 1, True)

tempfile_calls = Calls()
for _name in ("mkstemp", "mkdtemp", "NamedTemporaryFile"):
    setattr(tempfile_calls, _name, _temp(_name))
tempfile_calls.gettempdir = tempfile.gettempdir


# ----- determinism ----------------------------------------------------------------------------------------------------


def stale_files(first: Any, second: Any) -> str | None:
    """Where the second run of a schedule found a path other than the first did at its first touch (a file another
    run left behind, or changed by something outside the run), or None."""
    a, b = first.resources.get(RESOURCE), second.resources.get(RESOURCE)
    if a is None or b is None or a.found is None or b.found is None:
        return None
    for name, seen in a.found.items():
        if name in b.found and b.found[name] != seen:
            was = "absent" if seen is None else "there"
            now = "absent" if b.found[name] is None else ("there" if seen is None else "changed")
            return (
                f"the same schedule found the real file {name} {now} the second time (it was {was} the first "
                f"time): a run reads what an earlier one left on the disk. A run is fresh only if its files are: "
                f"give every schedule its own temporary directory (pytest's tmp_path, or tempfile inside the test)"
            )
    return None
