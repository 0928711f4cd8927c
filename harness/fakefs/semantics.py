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
    123: (errno.EINVAL, "The filename, directory name, or volume label syntax is incorrect"),
    267: (errno.ENOTDIR, "The directory name is invalid"),
}
ERROR_SHARING_VIOLATION = 32
ERROR_ACCESS_DENIED = 5
ERROR_INVALID_NAME = 123
ERROR_DIRECTORY = 267

# Characters Win32 refuses in a name (besides the separators): ``<>:"|?*`` and the control characters 0-31.
# (":" on NTFS also introduces an alternate data stream; streams are not modelled, so a colon is invalid.)
_INVALID_CHARS = frozenset('<>:"|?*') | frozenset(chr(c) for c in range(32))
# DOS device names (Windows 10): reserved as the last component, also with an extension or trailing spaces.
_DEVICES = frozenset({"CON", "PRN", "AUX", "NUL"} | {f"{p}{n}" for p in ("COM", "LPT")
                                                     for n in "123456789\u00b9\u00b2\u00b3"})


def windows_text(exc: OSError) -> str:
    """``str()`` of an error as CPython on Windows prints it: ``[WinError n] <Windows text>: 'path'`` (the error
    itself still carries the mapped errno). Every Windows error class below prints through it."""
    text = f"[WinError {exc.winerror}] {exc.strerror}"  # type: ignore[attr-defined]
    if exc.filename is not None:
        text += f": {exc.filename!r}"
        if exc.filename2 is not None:
            text += f" -> {exc.filename2!r}"
    return text


def windows_rebuilt(exc: OSError) -> tuple:
    """How a Windows error pickles: rebuilt through ``win_error``, since its class masquerades under a builtin name
    that would unpickle as the builtin."""
    return (win_error, (exc.winerror, exc.filename, exc.filename2))  # type: ignore[attr-defined]


# The Windows errors: the usual classes (``except PermissionError`` catches them), each with ``winerror`` (set by
# ``win_error``) and the two functions above for printing and pickling; no shared base beyond the builtin one.


class WinPermissionError(PermissionError):
    """PermissionError as Windows raises it (sharing violation 32, access denied 5)."""

    winerror: int
    __str__ = windows_text
    __reduce__ = windows_rebuilt


class WinFileNotFoundError(FileNotFoundError):
    """FileNotFoundError with a Windows error code (2 or 3)."""

    winerror: int
    __str__ = windows_text
    __reduce__ = windows_rebuilt


class WinFileExistsError(FileExistsError):
    """FileExistsError with a Windows error code (183)."""

    winerror: int
    __str__ = windows_text
    __reduce__ = windows_rebuilt


class WinNotADirectoryError(NotADirectoryError):
    """NotADirectoryError with a Windows error code (267)."""

    winerror: int
    __str__ = windows_text
    __reduce__ = windows_rebuilt


class WinOSError(OSError):
    """Any other OSError with a Windows error code (e.g. 145, directory not empty)."""

    winerror: int
    __str__ = windows_text
    __reduce__ = windows_rebuilt


_WIN_CLASS = {
    errno.EACCES: WinPermissionError,
    errno.ENOENT: WinFileNotFoundError,
    errno.EEXIST: WinFileExistsError,
    errno.ENOTDIR: WinNotADirectoryError,
}


for _cls in (WinPermissionError, WinFileNotFoundError, WinFileExistsError, WinNotADirectoryError, WinOSError):
    # Tracebacks then read "PermissionError: [WinError 32] ..." exactly as in a Windows CI log.
    _cls.__name__ = _cls.__qualname__ = _cls.__mro__[1].__name__
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
    winerror) and "open" for ``open()`` (the C runtime reports a plain errno, also on Windows).

    ``textual_paths``: Win32 normalises a path as a string before the filesystem sees it (``normalize``);
    POSIX resolves it component by component in the kernel (done by the store)."""

    name = POSIX
    case_sensitive = True
    textual_paths = False
    # Linux's limits, in bytes of the path as encoded (ENAMETOOLONG): a name longer than NAME_MAX fails when a
    # lookup reaches it, a whole path of PATH_MAX bytes or more fails before any lookup. None: not modelled.
    name_max: int | None = 255
    path_max: int | None = 4096
    # Directory listing order: tmpfs lists the newest entry first on most kernels (creation order on some 6.x
    # ones, see tests/fakefs/real_tmpfs.py), and a rename, replacing or not, makes its target the newest. Code
    # that copies a tree into itself sees the difference. The native order of the semantics;
    # ``FakeFS.listing_order`` can choose the other.
    newest_first = True

    def normalize(self, parts: list[str], shown: str, api: str, path2: str | None = None) -> tuple[list[str], bool]:
        raise NotImplementedError

    def is_device(self, name: str) -> bool:
        return False

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
    textual_paths = True
    name_max = None  # MAX_PATH and long-path opt-in are Windows configuration: not modelled
    path_max = None
    newest_first = False  # creation order (NTFS's collation order is not modelled)

    def key(self, name: str) -> str:
        """NTFS compares names through its one-to-one upper-case table, not Unicode case folding: "ß" and "ss",
        or "k" and the Kelvin sign, are different names. Approximated by the simple (single-character)
        upper-case mapping of the running Python's Unicode database."""
        if name.isascii():
            return name.upper()
        return "".join(map(simple_upper, name))

    def normalize(self, parts: list[str], shown: str, api: str, path2: str | None = None) -> tuple[list[str], bool]:
        """GetFullPathNameW's textual normalisation (MS docs, "File path formats on Windows systems"): "." and
        ".." are removed as text (``x/../a`` is ``a`` even if ``x`` does not exist), a component ending in one
        period loses it, trailing periods and spaces of the last component go (``a.`` and ``a `` name ``a``);
        then names with invalid characters fail with ERROR_INVALID_NAME (123)."""
        slash = bool(parts) and parts[-1] == ""
        out: list[str] = []
        for part in parts:
            if not part or part == ".":
                continue
            if part == "..":
                if out:
                    out.pop()
                continue
            if part.endswith(".") and not part.endswith(".."):
                part = part[:-1]
            out.append(part)
        if out and not slash:
            out[-1] = out[-1].rstrip(". ")
            if not out[-1]:
                out.pop()
        for part in out:
            if not _INVALID_CHARS.isdisjoint(part):
                raise self.error(errno.EINVAL, shown, path2, api=api, winerror=ERROR_INVALID_NAME)
        return out, slash

    def is_device(self, name: str) -> bool:
        """A DOS device name as the last component: "NUL", "nul.txt", "COM1 " all name a device, not a file."""
        return name.split(".", 1)[0].rstrip(" ").upper() in _DEVICES

    def error(self, code: int, path: str | None, path2: str | None = None, *, api: str = "os",
              winerror: int | None = None) -> OSError:
        if api == "open" or winerror is None:
            return posix_error(code, path, path2)
        return win_error(winerror, path, path2)


_UPPER: dict[str, str] = {}


def simple_upper(ch: str) -> str:
    """Unicode simple upper-case mapping of one character (one character out: "ß" stays "ß", "ǆ" -> "Ǆ")."""
    up = _UPPER.get(ch)
    if up is None:
        up = ch.upper()
        if len(up) != 1:
            title = ch.title()  # the Greek letters with ypogegrammeni map to their single title-case letter
            up = title if len(title) == 1 else ch
        _UPPER[ch] = up
    return up


def semantics_for(name: str) -> Semantics:
    if name == POSIX:
        return PosixSemantics()
    if name == WINDOWS:
        return WindowsSemantics()
    raise ValueError(f"unknown filesystem semantics {name!r}: expected 'posix' or 'windows'")

__racecheck_engine__ = True  # the fake is part of the engine: never instrumented itself
