"""How each imitated OS reports filesystem errors and compares names.

The fake must fail the way the real OS fails, down to the exception class, ``errno`` and message, because code
under test branches on them (``except PermissionError``, ``e.errno == errno.EXDEV``, ``e.winerror == 32``). On
Linux an ``OSError`` never carries ``winerror`` and prints ``[Errno n]``, so Windows errors are raised as small
subclasses of the usual classes that add ``winerror`` and print ``[WinError n] <Windows text>: 'path'`` exactly
as CPython does on Windows.
"""

from __future__ import annotations

import errno
import os

POSIX = "posix"
WINDOWS = "windows"

# Windows error codes used by the model, with the text FormatMessage gives and the errno CPython maps them to.
WINERROR = {
    2: (errno.ENOENT, "The system cannot find the file specified"),
    3: (errno.ENOENT, "The system cannot find the path specified"),
    5: (errno.EACCES, "Access is denied"),
    32: (errno.EACCES, "The process cannot access the file because it is being used by another process"),
    80: (errno.EEXIST, "The file exists"),
    145: (errno.ENOTEMPTY, "The directory is not empty"),
    183: (errno.EEXIST, "Cannot create a file when that file already exists"),
    267: (errno.ENOTDIR, "The directory name is invalid"),
}
ERROR_SHARING_VIOLATION = 32
ERROR_ACCESS_DENIED = 5


class _WinErrorMixin:
    """Adds ``winerror`` and the Windows rendering; the base class still carries the (mapped) errno."""

    winerror: int

    def __str__(self) -> str:
        text = f"[WinError {self.winerror}] {self.strerror}"
        if self.filename is not None:
            text += f": {self.filename!r}"
            if self.filename2 is not None:
                text += f" -> {self.filename2!r}"
        return text

    def __reduce__(self):  # rebuild through win_error: the class masquerades under a builtin name
        return (win_error, (self.winerror, self.filename, self.filename2))


class WinPermissionError(_WinErrorMixin, PermissionError):
    """PermissionError as Windows raises it (sharing violation 32, access denied 5)."""


class WinFileNotFoundError(_WinErrorMixin, FileNotFoundError):
    """FileNotFoundError with a Windows error code (2 or 3)."""


class WinFileExistsError(_WinErrorMixin, FileExistsError):
    """FileExistsError with a Windows error code (183)."""


class WinNotADirectoryError(_WinErrorMixin, NotADirectoryError):
    """NotADirectoryError with a Windows error code (267)."""


class WinOSError(_WinErrorMixin, OSError):
    """Any other OSError with a Windows error code (e.g. 145, directory not empty)."""


_WIN_CLASS = {
    errno.EACCES: WinPermissionError,
    errno.ENOENT: WinFileNotFoundError,
    errno.EEXIST: WinFileExistsError,
    errno.ENOTDIR: WinNotADirectoryError,
}


for _cls in (WinPermissionError, WinFileNotFoundError, WinFileExistsError, WinNotADirectoryError, WinOSError):
    # Tracebacks then read "PermissionError: [WinError 32] ..." exactly as in a Windows CI log.
    _cls.__name__ = _cls.__qualname__ = _cls.__mro__[2].__name__
    _cls.__module__ = "builtins"


def win_error(winerror: int, filename: str | None = None, filename2: str | None = None) -> OSError:
    """The exception CPython on Windows raises for ``winerror`` from an ``os`` call on ``filename``."""
    code, text = WINERROR[winerror]
    cls = _WIN_CLASS.get(code, WinOSError)
    exc = cls(code, text, filename, None, filename2)
    exc.winerror = winerror
    return exc


def posix_error(code: int, filename: str | None = None, filename2: str | None = None) -> OSError:
    """The exception CPython raises for ``errno`` ``code`` (the constructor picks the subclass, like the OS)."""
    if filename2 is not None:
        return OSError(code, os.strerror(code), filename, None, filename2)
    if filename is not None:
        return OSError(code, os.strerror(code), filename)
    return OSError(code, os.strerror(code))


class Semantics:
    """Name comparison and error construction for one OS. ``api`` is "os" for ``os.*`` calls (Windows reports a
    winerror) and "open" for ``open()`` (the C runtime reports a plain errno, also on Windows)."""

    name = POSIX
    case_sensitive = True

    def key(self, name: str) -> str:
        """The directory-lookup key of a name (case-folded on Windows)."""
        return name

    def error(self, code: int, path: str | None, path2: str | None = None, *, api: str = "os",
              winerror: int | None = None) -> OSError:
        return posix_error(code, path, path2)


class PosixSemantics(Semantics):
    """Linux: unlink/rename of open files succeed; open handles keep the (possibly orphaned) inode."""


class WindowsSemantics(Semantics):
    """Windows as Python sees it: ``open()`` shares read/write but not delete, so removing or renaming an open file
    is a sharing violation; names compare case-insensitively and keep the case they were created with."""

    name = WINDOWS
    case_sensitive = False

    def key(self, name: str) -> str:
        return name.casefold()

    def error(self, code: int, path: str | None, path2: str | None = None, *, api: str = "os",
              winerror: int | None = None) -> OSError:
        if api == "open" or winerror is None:
            return posix_error(code, path, path2)
        return win_error(winerror, path, path2)


def semantics_for(name: str) -> Semantics:
    if name == POSIX:
        return PosixSemantics()
    if name == WINDOWS:
        return WindowsSemantics()
    raise ValueError(f"unknown filesystem semantics {name!r}: expected 'posix' or 'windows'")

__racecheck_engine__ = True  # the fake is part of the engine: never instrumented itself
