"""Stand-ins for ``shutil`` and ``tempfile``, wherever control reaches: the facades ``shutil_facade`` and
``tempfile_facade`` over the functions below.

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

from racecheck.fakefs import os_calls as fos
from racecheck.fakefs import pycompat
from racecheck.fakefs.mount import run_store, target
from racecheck.fakefs.realdisk import shutil_calls as _disk_shutil
from racecheck.fakefs.realdisk import tempfile_calls as _disk_tempfile


def _fake(*paths: Any) -> bool:
    return any(target(p) is not None for p in paths)


# ------------------------------------------------------------------------------------------------ shutil
def _clone(name: str, by_descriptor: bool = False) -> Any:
    """The cloned shutil's ``name``; ``by_descriptor``: from the clone whose rmtree walks by directory descriptor
    (CPython's choice on Linux, see stdlib_clone)."""
    return fos.clones()["shutil_fd" if by_descriptor else "shutil"].__dict__[name]


def copyfile(src: Any, dst: Any, *, follow_symlinks: bool = True) -> Any:
    if not _fake(src, dst):
        return _disk_shutil.copyfile(src, dst, follow_symlinks=follow_symlinks)
    return _clone("copyfile")(src, dst, follow_symlinks=follow_symlinks)


def copy(src: Any, dst: Any, *, follow_symlinks: bool = True) -> Any:
    if not _fake(src, dst):
        return _disk_shutil.copy(src, dst, follow_symlinks=follow_symlinks)
    return _clone("copy")(src, dst, follow_symlinks=follow_symlinks)


def copy2(src: Any, dst: Any, *, follow_symlinks: bool = True) -> Any:
    if not _fake(src, dst):
        return _disk_shutil.copy2(src, dst, follow_symlinks=follow_symlinks)
    return _clone("copy2")(src, dst, follow_symlinks=follow_symlinks)


def copymode(src: Any, dst: Any, *, follow_symlinks: bool = True) -> Any:
    if not _fake(src, dst):
        return _disk_shutil.copymode(src, dst, follow_symlinks=follow_symlinks)
    return _clone("copymode")(src, dst, follow_symlinks=follow_symlinks)


def copystat(src: Any, dst: Any, *, follow_symlinks: bool = True) -> Any:
    if not _fake(src, dst):
        return _disk_shutil.copystat(src, dst, follow_symlinks=follow_symlinks)
    return _clone("copystat")(src, dst, follow_symlinks=follow_symlinks)


def _own(fn: Any) -> Any:
    """A copy function given by the caller as the real shutil's maps to its clone (else it would leak)."""
    real = {shutil.copy2: "copy2", shutil.copy: "copy", shutil.copyfile: "copyfile",
            copy2: "copy2", copy: "copy", copyfile: "copyfile"}
    name = real.get(fn)
    return _clone(name) if name else fn


def copytree(src: Any, dst: Any, symlinks: bool = False, ignore: Any = None, copy_function: Any = shutil.copy2,
             ignore_dangling_symlinks: bool = False, dirs_exist_ok: bool = False) -> Any:
    if not _fake(src, dst):
        return _disk_shutil.copytree(src, dst, symlinks, ignore, copy_function, ignore_dangling_symlinks, dirs_exist_ok)
    return _clone("copytree")(src, dst, symlinks, ignore, _own(copy_function), ignore_dangling_symlinks,
                              dirs_exist_ok)


def rmtree(path: Any, ignore_errors: bool = False, onerror: Any = None, *, onexc: Any = None,
           dir_fd: Any = None) -> None:
    """shutil.rmtree; keyword arguments are passed on only when given (3.10 has no dir_fd, 3.12 adds onexc)."""
    kw = {}
    if onexc is not None:
        kw["onexc"] = onexc
    if dir_fd is not None:
        kw["dir_fd"] = dir_fd
    hit = target(path)
    if hit is None:
        return _disk_shutil.rmtree(path, ignore_errors, onerror, **kw)
    kw.pop("dir_fd", None)  # paths under the mount are absolute: dir_fd is ignored for them, as by the OS
    return _clone("rmtree", by_descriptor=hit[0].sem.name != "windows")(path, ignore_errors, onerror, **kw)


def move(src: Any, dst: Any, copy_function: Any = shutil.copy2) -> Any:
    """shutil.move's own algorithm (the running Python's) over the stand-ins."""
    if not _fake(src, dst):
        return _disk_shutil.move(src, dst, copy_function)
    return _clone("move")(src, dst, _own(copy_function))


shutil_overrides = _disk_shutil.stand_ins(globals())  # what the real disk's table lists (``realdisk.Calls``)


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
        return _disk_tempfile.mkstemp(suffix, prefix, dir, text)
    store, directory = hit
    directory = posixpath.normpath(directory)  # CPython's _mkstemp_inner takes abspath(dir): ".." is textual here
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
        return _disk_tempfile.mkdtemp(suffix, prefix, dir)
    store, directory = hit
    name = store.temp_name(directory, prefix if prefix is not None else "tmp", suffix or "")
    fos.mkdir(name, 0o700)
    return posixpath.normpath(name) if pycompat.python_version() >= (3, 12) else name


class _NamedTemporaryFile:
    """tempfile._TemporaryFileWrapper for the fake: ``.name``, delegation, deletion as the running Python does it.

    Windows (``delete`` and, from 3.12, ``delete_on_close``): CPython opens with O_TEMPORARY (delete access,
    shared delete, deleted by the OS at close), so a second ``open()`` of the name is a sharing violation.
    Otherwise the wrapper unlinks the name itself: at close, or at ``__exit__`` when ``delete_on_close=False``;
    a name that is already gone makes that unlink raise on 3.10/3.11 and is ignored from 3.12."""

    def __init__(self, file: Any, name: str, delete: bool, delete_on_close: bool, os_deletes: bool) -> None:
        self.file = file
        self.name = name
        self.delete = delete
        self._delete_on_close = delete_on_close
        self._os_deletes = os_deletes
        self._close_called = False
        self._cleanup_called = False

    def __getattr__(self, attr: str) -> Any:
        return getattr(self.__dict__["file"], attr)

    def __enter__(self) -> _NamedTemporaryFile:
        self.file.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        if pycompat.has_delete_on_close():
            self._cleanup()
        else:
            self.close()

    def __iter__(self) -> Any:
        return iter(self.file)

    def _unlink(self) -> None:
        if self._os_deletes or not self.delete:
            return
        if pycompat.named_temporary_close_raises_if_gone():
            fos.remove(self.name)
            return
        try:
            fos.remove(self.name)
        except FileNotFoundError:
            pass

    def _cleanup(self) -> None:
        if self._cleanup_called:
            return
        self._cleanup_called = True
        try:
            if not self._close_called:
                self._close_called = True
                self.file.close()
        finally:
            self._unlink()

    def close(self) -> None:
        if not pycompat.has_delete_on_close():
            if self._close_called:
                return
            self._close_called = True
            try:
                self.file.close()
            finally:
                self._unlink()
            return
        if self._close_called:
            return
        self._close_called = True
        try:
            self.file.close()
        finally:
            if self.delete and self._delete_on_close:
                self._cleanup()


def NamedTemporaryFile(mode: str = "w+b", buffering: int = -1, encoding: Any = None, newline: Any = None,  # noqa: N802
                       suffix: Any = None, prefix: Any = None, dir: Any = None, delete: bool = True, *,
                       errors: Any = None, **kwargs: Any) -> Any:
    hit = _temp_dir(dir)
    if hit is None:
        return _disk_tempfile.NamedTemporaryFile(mode, buffering, encoding, newline, suffix, prefix, dir, delete,
                                           errors=errors, **kwargs)
    from racecheck.fakefs import handles

    delete_on_close = True
    if "delete_on_close" in kwargs and pycompat.has_delete_on_close():
        delete_on_close = bool(kwargs.pop("delete_on_close"))
    if kwargs:
        raise TypeError(f"NamedTemporaryFile() got an unexpected keyword argument {next(iter(kwargs))!r}")
    store, directory = hit
    name = store.temp_name(posixpath.normpath(directory), prefix if prefix is not None else "tmp", suffix or "")
    os_deletes = store.sem.name == "windows" and delete and delete_on_close
    open_mode = mode.replace("w", "x") if "w" in mode else mode
    file = handles.open_file(store, name, open_mode, buffering, encoding, errors, newline,
                             share_delete=os_deletes, delete_on_close=os_deletes)
    return _NamedTemporaryFile(file, name, delete, delete_on_close, os_deletes)


tempfile_overrides = _disk_tempfile.stand_ins(globals())

shutil_facade = fos.Facade(shutil, shutil_overrides)
tempfile_facade = fos.Facade(tempfile, tempfile_overrides)

__racecheck_engine__ = True  # the fake is part of the engine: never instrumented itself
