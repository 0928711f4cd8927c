"""Stand-ins for ``shutil`` and ``tempfile`` in instrumented modules.

The real ``shutil.move``/``rmtree`` and ``tempfile.mkstemp`` call the real ``os`` through their own globals, so
for mounted paths they are re-implemented on the os stand-ins with the same algorithm (move = rename, and on any
OSError copy then unlink, as CPython does). Temporary names are deterministic (a per-store counter), because
random names would make two replays of one schedule differ.
"""

from __future__ import annotations

import errno
import os
import posixpath
import shutil
import tempfile
from typing import Any

from racecheck.fakefs import os_facade as fos
from racecheck.fakefs.mount import run_store, target


def _fake(*paths: Any) -> bool:
    return any(target(p) is not None for p in paths)


# ------------------------------------------------------------------------------------------------ shutil
def copyfile(src: Any, dst: Any, *, follow_symlinks: bool = True) -> Any:
    if not _fake(src, dst):
        return shutil.copyfile(src, dst, follow_symlinks=follow_symlinks)
    with fos.fake_open(src, "rb") as fsrc, fos.fake_open(dst, "wb") as fdst:
        shutil.copyfileobj(fsrc, fdst)
    return dst


def copy(src: Any, dst: Any, *, follow_symlinks: bool = True) -> Any:
    if not _fake(src, dst):
        return shutil.copy(src, dst, follow_symlinks=follow_symlinks)
    if fos.isdir(dst):
        dst = posixpath.join(os.fspath(dst), posixpath.basename(os.fspath(src)))
    return copyfile(src, dst)


def copy2(src: Any, dst: Any, *, follow_symlinks: bool = True) -> Any:
    if not _fake(src, dst):
        return shutil.copy2(src, dst, follow_symlinks=follow_symlinks)
    return copy(src, dst)


def copytree(src: Any, dst: Any, *args: Any, dirs_exist_ok: bool = False, **kwargs: Any) -> Any:
    if not _fake(src, dst):
        return shutil.copytree(src, dst, *args, dirs_exist_ok=dirs_exist_ok, **kwargs)
    fos.makedirs(dst, exist_ok=dirs_exist_ok)
    for entry in list(fos.scandir(src)):
        target_path = posixpath.join(os.fspath(dst), entry.name)
        if entry.is_dir():
            copytree(entry.path, target_path, dirs_exist_ok=dirs_exist_ok)
        else:
            copyfile(entry.path, target_path)
    return dst


def rmtree(path: Any, ignore_errors: bool = False, onerror: Any = None, *, onexc: Any = None,
           dir_fd: Any = None) -> None:
    if not _fake(path):
        kw = {"onexc": onexc} if onexc is not None else {}
        return shutil.rmtree(path, ignore_errors, onerror, dir_fd=dir_fd, **kw)

    def fail(func: Any, p: Any, exc: BaseException) -> None:
        if ignore_errors:
            return
        if onexc is not None:
            onexc(func, p, exc)
        elif onerror is not None:
            onerror(func, p, (type(exc), exc, exc.__traceback__))
        else:
            raise exc

    try:
        entries = list(fos.scandir(path))
    except OSError as exc:
        fail(fos.scandir, path, exc)
        return
    for entry in entries:
        if entry.is_dir():
            rmtree(entry.path, ignore_errors, onerror, onexc=onexc)
        else:
            try:
                fos.remove(entry.path)
            except OSError as exc:
                fail(fos.remove, entry.path, exc)
    try:
        fos.rmdir(path)
    except OSError as exc:
        fail(fos.rmdir, path, exc)


def move(src: Any, dst: Any, copy_function: Any = copy2) -> Any:
    """shutil.move's algorithm over the stand-ins: rename; on OSError copy and unlink the source."""
    if not _fake(src, dst):
        return shutil.move(src, dst, copy_function)
    real_dst = dst
    if fos.isdir(dst):
        real_dst = posixpath.join(os.fspath(dst), posixpath.basename(os.fspath(src).rstrip("/")))
        if fos.exists(real_dst):
            raise shutil.Error(f"Destination path '{real_dst}' already exists")
    try:
        fos.rename(src, real_dst)
    except OSError:
        if fos.isdir(src):
            copytree(src, real_dst)
            rmtree(src)
        else:
            if copy_function is shutil.copy2 or copy_function is shutil.copy:
                copy_function = copy2
            copy_function(src, real_dst)
            fos.remove(src)
    return real_dst


shutil_overrides = {"copyfile": copyfile, "copy": copy, "copy2": copy2, "copytree": copytree,
                    "rmtree": rmtree, "move": move}


# ---------------------------------------------------------------------------------------------- tempfile
def _temp_dir(dir: Any) -> tuple[Any, str] | None:
    """(store, directory) when a temp file belongs in the fake, else None."""
    if dir is not None:
        hit = target(dir)
        return hit
    store = run_store()
    if store is None or not store.spec.capture_tempdir:
        return None
    root = store.spec.temp_root
    fos.makedirs(root, exist_ok=True)
    return store, root


def gettempdir() -> str:
    hit = _temp_dir(None)
    return tempfile.gettempdir() if hit is None else hit[1]


def mkstemp(suffix: Any = None, prefix: Any = None, dir: Any = None, text: bool = False) -> tuple[int, str]:
    hit = _temp_dir(dir)
    if hit is None:
        return tempfile.mkstemp(suffix, prefix, dir, text)
    store, directory = hit
    for _ in range(100):
        name = store.temp_name(directory, prefix if prefix is not None else "tmp", suffix or "")
        try:
            return fos.os_open(name, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600), name
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "No usable temporary file name found")


def mkdtemp(suffix: Any = None, prefix: Any = None, dir: Any = None) -> str:
    hit = _temp_dir(dir)
    if hit is None:
        return tempfile.mkdtemp(suffix, prefix, dir)
    store, directory = hit
    name = store.temp_name(directory, prefix if prefix is not None else "tmp", suffix or "")
    fos.mkdir(name, 0o700)
    return name


class _NamedTemporaryFile:
    """tempfile._TemporaryFileWrapper for the fake: ``.name``, delegation, delete on close.

    On Windows, CPython opens it with O_TEMPORARY (share-delete, delete-on-close); on POSIX it unlinks at close.
    """

    def __init__(self, file: Any, name: str, delete: bool, posix_unlink: bool) -> None:
        self.file = file
        self.name = name
        self.delete = delete
        self._posix_unlink = posix_unlink

    def __getattr__(self, attr: str) -> Any:
        return getattr(self.__dict__["file"], attr)

    def __enter__(self) -> _NamedTemporaryFile:
        self.file.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __iter__(self) -> Any:
        return iter(self.file)

    def close(self) -> None:
        if self.file.closed:
            return
        self.file.close()
        if self.delete and self._posix_unlink:
            try:
                fos.remove(self.name)
            except FileNotFoundError:
                pass


def NamedTemporaryFile(mode: str = "w+b", buffering: int = -1, encoding: Any = None, newline: Any = None,  # noqa: N802
                       suffix: Any = None, prefix: Any = None, dir: Any = None, delete: bool = True, *,
                       errors: Any = None, **kwargs: Any) -> Any:
    hit = _temp_dir(dir)
    if hit is None:
        return tempfile.NamedTemporaryFile(mode, buffering, encoding, newline, suffix, prefix, dir, delete,
                                           errors=errors, **kwargs)
    from racecheck.fakefs import handles

    store, directory = hit
    name = store.temp_name(directory, prefix if prefix is not None else "tmp", suffix or "")
    windows = store.sem.name == "windows"
    open_mode = mode.replace("w", "x") if "w" in mode else mode
    file = handles.open_file(store, name, open_mode, buffering, encoding, errors, newline,
                             share_delete=windows and delete, delete_on_close=windows and delete)
    return _NamedTemporaryFile(file, name, delete, posix_unlink=not windows)


tempfile_overrides = {"gettempdir": gettempdir, "mkstemp": mkstemp, "mkdtemp": mkdtemp,
                      "NamedTemporaryFile": NamedTemporaryFile}

__racecheck_engine__ = True  # the fake is part of the engine: never instrumented itself
