"""Stand-ins for ``os``, ``os.path``, ``io`` and builtin ``open``, wherever control reaches (every module control by
default swaps names in, and builtins' ``open`` itself during an exploration): the functions below and the facades
built from them (``os_facade``, ``path_facade``, ``io_facade``; ``fake_open`` for the builtin).

Each facade is a module object that forwards every attribute it does not override to the real module, so code that
reads ``os.sep`` or ``os.path.join`` sees the real thing. Overridden functions send paths under the run's mount
root to the store and everything else, untouched, to the real function. The real ``os.makedirs``/``os.walk``
call the real ``os`` functions through their own module globals, so they are re-implemented here on top of the
stand-ins (each step a scheduling point, as the real ones are a sequence of syscalls).

Which functions the facades take over is not listed here: they are the ones the real disk's tables list
(``realdisk.Calls.stand_ins``), each by the function of its name below or one named at the facade.
"""

from __future__ import annotations

import builtins
import errno
import io
import os
import posixpath
import stat as stat_mod
import types
from typing import Any

from racecheck.control.facade import ModuleFacade
from racecheck.fakefs import handles
from racecheck.fakefs.mount import fd_store, run_store, target
from racecheck.fakefs.realdisk import os_calls as _disk_os
from racecheck.fakefs.realdisk import path_calls as _disk_path
from racecheck.fakefs.realdisk_files import disk_open
from racecheck.fakefs.semantics import posix_error

real_open = builtins.open
_real_os = os
_real_path = os.path


class Facade(ModuleFacade):
    """The engine's shared module facade, plus POSIX-only names hidden under windows semantics."""

    def __init__(self, real: types.ModuleType, overrides: dict[str, Any],
                 windows_hidden: frozenset[str] = frozenset()) -> None:
        super().__init__(real, overrides)
        self.__dict__["_racecheck_windows_hidden"] = windows_hidden

    def hidden(self, name: str) -> bool:
        if name not in self.__dict__["_racecheck_windows_hidden"]:
            return False
        store = run_store()
        # Code that feature-tests (``hasattr(os, "O_DIRECTORY")``) must take its Windows branch.
        return store is not None and store.spec.semantics == "windows"


def _shown(path: Any) -> Any:
    """The path as the caller spelled it (a descriptor stays a descriptor: ``os.stat(fd)``)."""
    return path if isinstance(path, int) else os.fspath(path)


# -------------------------------------------------------------------------------------------- builtins.open
def fake_open(file: Any, mode: str = "r", buffering: int = -1, encoding: str | None = None,
              errors: str | None = None, newline: str | None = None, closefd: bool = True,
              opener: Any = None) -> Any:
    """``open()``: fake for mounted paths and fake descriptors, the real ``open`` otherwise."""
    store = fd_store(file)
    if store is not None:
        return handles.fdopen(store, file, mode, buffering, encoding, errors, newline, closefd)
    hit = target(file)
    if hit is None:
        return disk_open(file, mode, buffering, encoding, errors, newline, closefd, opener)
    store, path = hit
    return handles.open_file(store, path, mode, buffering, encoding, errors, newline, shown=file)


# ------------------------------------------------------------------------------------------------- os
def _at(path: Any, dir_fd: Any) -> tuple[str, Any, Any]:
    """(shown, path, dir_fd) as a ``*at()`` call means them. ``shown``: the path as the caller spelled it, for
    error messages. A relative name under a fake directory descriptor becomes that directory's current path joined
    with it (the descriptor follows its directory, see ``Store.dir_path``), and the descriptor is dropped; an
    absolute path ignores ``dir_fd``, as the OS does. Anything else is returned as it is, for the real call."""
    shown = _shown(path)
    store = fd_store(dir_fd) if dir_fd is not None else None
    if store is None:
        return shown, path, dir_fd
    if isinstance(shown, str) and shown.startswith("/"):
        return shown, path, None
    return shown, posixpath.join(store.dir_path(dir_fd), shown), None


def remove(path: Any, *, dir_fd: Any = None) -> None:
    shown, path, dir_fd = _at(path, dir_fd)
    hit = target(path)
    if hit is None:
        return _disk_os.remove(path, dir_fd=dir_fd)
    hit[0].remove(hit[1], shown=shown)


def _rename(src: Any, dst: Any, replace: bool, real: Any, **kw: Any) -> None:
    s, d = target(src), target(dst)
    if s is None and d is None:
        return real(src, dst, **kw)
    if s is None or d is None or s[0] is not d[0]:
        raise posix_error(errno.EXDEV, _shown(src), _shown(dst))  # the store is its own device
    s[0].rename(s[1], d[1], replace=replace, shown=(_shown(src), _shown(dst)))


def rename(src: Any, dst: Any, *, src_dir_fd: Any = None, dst_dir_fd: Any = None) -> None:
    _rename(src, dst, False, _disk_os.rename, src_dir_fd=src_dir_fd, dst_dir_fd=dst_dir_fd)


def replace(src: Any, dst: Any, *, src_dir_fd: Any = None, dst_dir_fd: Any = None) -> None:
    _rename(src, dst, True, _disk_os.replace, src_dir_fd=src_dir_fd, dst_dir_fd=dst_dir_fd)


def stat(path: Any, *, dir_fd: Any = None, follow_symlinks: bool = True) -> os.stat_result:
    store = fd_store(path)
    if store is not None:
        return store.h_fstat(store.fds[path])
    shown, path, dir_fd = _at(path, dir_fd)
    hit = target(path)
    if hit is None:
        return _disk_os.stat(path, dir_fd=dir_fd, follow_symlinks=follow_symlinks)
    return hit[0].stat(hit[1], shown=shown)


def lstat(path: Any, *, dir_fd: Any = None) -> os.stat_result:
    shown, path, dir_fd = _at(path, dir_fd)
    hit = target(path)
    if hit is None:
        return _disk_os.lstat(path, dir_fd=dir_fd)
    return hit[0].stat(hit[1], shown=shown)


def mkdir(path: Any, mode: int = 0o777, *, dir_fd: Any = None) -> None:
    shown, path, dir_fd = _at(path, dir_fd)
    hit = target(path)
    if hit is None:
        return _disk_os.mkdir(path, mode, dir_fd=dir_fd)
    hit[0].mkdir(hit[1], shown=shown)


def makedirs(name: Any, mode: int = 0o777, exist_ok: bool = False) -> None:
    """os.makedirs: the running Python's own code (a clone) over the stand-ins, each mkdir a scheduling point."""
    if target(name) is None:
        return _disk_os.makedirs(name, mode, exist_ok)
    return clones()["os"].makedirs(name, mode, exist_ok)


def rmdir(path: Any, *, dir_fd: Any = None) -> None:
    shown, path, dir_fd = _at(path, dir_fd)
    hit = target(path)
    if hit is None:
        return _disk_os.rmdir(path, dir_fd=dir_fd)
    hit[0].rmdir(hit[1], shown=shown)


def listdir(path: Any = ".") -> list:
    hit = target(path)
    if hit is None:
        return _disk_os.listdir(path)
    return [name for name, _ in hit[0].listdir(hit[1], shown=_shown(path))]


class FakeDirEntry:
    """os.DirEntry for a fake directory; ``stat()`` asks the store again, like the real one's lstat."""

    __slots__ = ("name", "path", "_dir", "_store", "_full")

    def __init__(self, store: Any, directory: str, shown_dir: str, name: str, is_dir: bool) -> None:
        self.name = name
        self.path = posixpath.join(shown_dir, name)
        self._full = posixpath.join(directory, name)
        self._store = store
        self._dir = is_dir

    def is_dir(self, *, follow_symlinks: bool = True) -> bool:
        return self._dir

    def is_file(self, *, follow_symlinks: bool = True) -> bool:
        return not self._dir

    def is_symlink(self) -> bool:
        return False

    def is_junction(self) -> bool:
        return False

    def inode(self) -> int:
        return self.stat().st_ino

    def stat(self, *, follow_symlinks: bool = True) -> os.stat_result:
        return self._store.stat(self._full, shown=self.path)

    def __fspath__(self) -> str:
        return self.path

    def __repr__(self) -> str:
        return f"<FakeDirEntry {self.name!r}>"


class _ScandirIterator:
    def __init__(self, entries: list[FakeDirEntry]) -> None:
        self._it = iter(entries)

    def __iter__(self) -> _ScandirIterator:
        return self

    def __next__(self) -> FakeDirEntry:
        return next(self._it)

    def close(self) -> None:
        self._it = iter(())

    def __enter__(self) -> _ScandirIterator:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def scandir(path: Any = ".") -> Any:
    fd_owner = fd_store(path)
    if fd_owner is not None:  # scandir(fd): the entries' paths are their bare names, as the OS gives them
        try:
            norm = fd_owner.dir_path(path)
        except FileNotFoundError:
            return _ScandirIterator([])  # a removed directory lists nothing (its names are all gone)
        listing = fd_owner.listdir(norm, shown=norm)
        return _ScandirIterator([FakeDirEntry(fd_owner, norm, "", name, node.is_dir) for name, node in listing])
    hit = target(path)
    if hit is None:
        return _disk_os.scandir(path)
    store, norm = hit
    shown = _shown(path)
    listing = store.listdir(norm, shown=shown)
    return _ScandirIterator([FakeDirEntry(store, norm, shown, name, node.is_dir) for name, node in listing])


def walk(top: Any, topdown: bool = True, onerror: Any = None, followlinks: bool = False) -> Any:
    """os.walk: the running Python's own code (a clone) over the stand-ins."""
    if target(top) is None:
        return _disk_os.walk(top, topdown, onerror, followlinks)
    return clones()["os"].walk(top, topdown, onerror, followlinks)


def listxattr(path: Any = None, *, follow_symlinks: bool = True) -> list:
    """The fake stores no extended attributes (shutil.copystat asks for them)."""
    hit = target(path)
    if hit is None:
        return _disk_os.listxattr(path, follow_symlinks=follow_symlinks)
    hit[0].stat(hit[1], shown=_shown(path))
    return []


def chmod(path: Any, mode: int, *, dir_fd: Any = None, follow_symlinks: bool = True) -> None:
    hit = target(path)
    if hit is None:
        return _disk_os.chmod(path, mode, dir_fd=dir_fd, follow_symlinks=follow_symlinks)
    hit[0].chmod(hit[1], mode, shown=_shown(path))


def utime(path: Any, times: Any = None, *, ns: Any = None, dir_fd: Any = None,
          follow_symlinks: bool = True) -> None:
    hit = target(path)
    if hit is None:
        kw = {"ns": ns} if ns is not None else {}
        return _disk_os.utime(path, times, dir_fd=dir_fd, follow_symlinks=follow_symlinks, **kw)
    when = times[1] if times else (ns[1] / 1e9 if ns else None)
    hit[0].utime(hit[1], when, shown=_shown(path))


def truncate(path: Any, length: int) -> None:
    store = fd_store(path)
    if store is not None:
        store.h_truncate(store.fds[path], length)
        return
    hit = target(path)
    if hit is None:
        return _disk_os.truncate(path, length)
    hit[0].truncate_path(hit[1], length, shown=_shown(path))


def access(path: Any, mode: int, *, dir_fd: Any = None, effective_ids: bool = False,
           follow_symlinks: bool = True) -> bool:
    hit = target(path)
    if hit is None:
        return _disk_os.access(path, mode, dir_fd=dir_fd, effective_ids=effective_ids,
                               follow_symlinks=follow_symlinks)
    return hit[0].stat(hit[1], quiet=True) is not None


def _no_links(real: Any) -> Any:
    def fn(src: Any, dst: Any, *args: Any, **kw: Any) -> None:
        if target(src) is None and target(dst) is None:
            return real(src, dst, *args, **kw)
        raise posix_error(errno.EPERM, _shown(src), _shown(dst))  # the fake has no links (documented limit)

    fn.__name__ = real.__name__
    return fn


def readlink(path: Any, *, dir_fd: Any = None) -> str:
    hit = target(path)
    if hit is None:
        return _disk_os.readlink(path, dir_fd=dir_fd)
    hit[0].stat(hit[1], shown=_shown(path))
    raise posix_error(errno.EINVAL, _shown(path))


# ---------------------------------------------------------------------------------------- descriptors
def os_open(path: Any, flags: int, mode: int = 0o777, *, dir_fd: Any = None) -> int:
    shown, path, dir_fd = _at(path, dir_fd)
    hit = target(path)
    if hit is None:
        return _disk_os.open(path, flags, mode, dir_fd=dir_fd)
    return hit[0].open(hit[1], flags, shown=shown, api="open", directory_ok=True).fd


def close(fd: int) -> None:
    store = fd_store(fd)
    if store is None:
        return _disk_os.close(fd)
    store.h_close(store.fds[fd])


def write(fd: int, data: Any) -> int:
    store = fd_store(fd)
    if store is None:
        return _disk_os.write(fd, data)
    return store.h_write(store.fds[fd], bytes(data))


def read(fd: int, n: int) -> bytes:
    store = fd_store(fd)
    if store is None:
        return _disk_os.read(fd, n)
    return store.h_read(store.fds[fd], n)


def lseek(fd: int, pos: int, how: int) -> int:
    store = fd_store(fd)
    if store is None:
        return _disk_os.lseek(fd, pos, how)
    return store.h_seek(store.fds[fd], pos, how)


def fsync(fd: Any) -> None:
    if not isinstance(fd, int) and hasattr(fd, "fileno"):
        fd = fd.fileno()
    store = fd_store(fd)
    if store is None:
        return _disk_os.fsync(fd)
    store.h_fsync(store.fds[fd])


def fstat(fd: int) -> os.stat_result:
    store = fd_store(fd)
    if store is None:
        return _disk_os.fstat(fd)
    return store.h_fstat(store.fds[fd])


def ftruncate(fd: int, length: int) -> None:
    store = fd_store(fd)
    if store is None:
        return _disk_os.ftruncate(fd, length)
    store.h_truncate(store.fds[fd], length)


def fdopen(fd: int, mode: str = "r", buffering: int = -1, encoding: str | None = None, *args: Any,
           **kwargs: Any) -> Any:
    store = fd_store(fd)
    if store is None:
        return disk_open(fd, mode, buffering, encoding, *args, **kwargs)
    return handles.fdopen(store, fd, mode, buffering, encoding, *args, **kwargs)


def sync() -> None:
    store = run_store()
    if store is None:
        return _real_os.sync()
    store.sync()


# -------------------------------------------------------------------------------------------- os.path
def _quiet_stat(path: Any) -> os.stat_result | None:
    hit = target(path)
    if hit is None:
        return None
    return hit[0].stat(hit[1], quiet=True)


def exists(path: Any) -> bool:
    if fd_store(path) is not None:
        return True
    if target(path) is None:
        return _disk_path.exists(path)
    return _quiet_stat(path) is not None


def lexists(path: Any) -> bool:
    if target(path) is None:
        return _disk_path.lexists(path)
    return _quiet_stat(path) is not None


def isfile(path: Any) -> bool:
    if target(path) is None:
        return _disk_path.isfile(path)
    st = _quiet_stat(path)
    return st is not None and stat_mod.S_ISREG(st.st_mode)


def isdir(path: Any) -> bool:
    if target(path) is None:
        return _disk_path.isdir(path)
    st = _quiet_stat(path)
    return st is not None and stat_mod.S_ISDIR(st.st_mode)


def islink(path: Any) -> bool:
    if target(path) is None:
        return _disk_path.islink(path)
    return False


def _stat_field(real: Any, field: str) -> Any:
    def fn(path: Any) -> Any:
        if target(path) is None:
            return real(path)
        return getattr(stat(path), field)

    fn.__name__ = real.__name__
    return fn


def samefile(f1: Any, f2: Any) -> bool:
    if target(f1) is None and target(f2) is None:
        return _disk_path.samefile(f1, f2)
    return clones()["path"].samefile(f1, f2)


# The functions stood in for are the ones the real disk's tables list (``realdisk.Calls``), each by the stand-in
# of its name above or by the one given here.
_path_overrides = _disk_path.stand_ins(globals(), **{
    field: _stat_field(getattr(_disk_path, field), "st_" + field[3:])
    for field in ("getsize", "getmtime", "getatime", "getctime")})
path_facade = Facade(_real_path, _path_overrides)

_os_overrides = _disk_os.stand_ins(globals(), unlink=remove, open=os_open, fdatasync=fsync,
                                   link=_no_links(_disk_os.link), symlink=_no_links(_disk_os.symlink))
_os_overrides["fdopen"] = fdopen  # a file object: on the real disk it is ``realdisk_files.disk_open``, no row
os_facade = Facade(_real_os, {"path": path_facade, **_os_overrides}, windows_hidden=frozenset({
    # open() flags that CPython's os module on Windows does not define
    "O_DIRECTORY", "O_NOFOLLOW", "O_SYNC", "O_DSYNC", "O_NONBLOCK", "O_CLOEXEC", "O_NOCTTY", "O_ASYNC",
    "O_DIRECT", "O_NOATIME", "O_PATH",
}))

io_facade = Facade(io, {"open": fake_open})

_clones: dict | None = None


def clones() -> dict:
    """The cloned stdlib namespaces (built on first use: ``os``, ``path``, ``shutil``); see stdlib_clone."""
    global _clones
    if _clones is None:
        from racecheck.fakefs import stdlib_clone

        os_over = {k: v for k, v in _os_overrides.items() if k not in ("makedirs", "walk")}
        path_over = {k: v for k, v in _path_overrides.items() if k != "samefile"}
        _clones = stdlib_clone.build(os_over, path_over, fake_open)
    return _clones

__racecheck_engine__ = True  # the fake is part of the engine: never instrumented itself
