"""File objects over store handles, layered exactly like CPython's ``open()``: raw -> buffered -> text.

Keeping the real layering matters for races: bytes written through a buffered file reach the store (and become
visible to other threads) only when the buffer flushes or the file closes, as on a real OS. Each raw call is one
store operation and therefore one scheduling point.
"""

from __future__ import annotations

import io
import os
from typing import Any

from racecheck.fakefs.store import Handle, Store


class FakeRawIO(io.RawIOBase):
    """The FileIO of the fake: unbuffered access to one store handle."""

    def __init__(self, handle: Handle, name: Any, mode: str, closefd: bool = True) -> None:
        super().__init__()
        self._h = handle
        self.name = name
        self.mode = mode
        self._closefd = closefd

    @property
    def handle(self) -> Handle:
        return self._h

    def _live(self) -> Handle:
        """The handle, or FileIO's errors: ValueError once closed (never a stale fake descriptor)."""
        if self.closed:
            raise ValueError("I/O operation on closed file")
        return self._h

    def _for(self, what: str) -> Handle:
        handle = self._live()
        if not (handle.readable if what == "reading" else handle.writable):
            raise io.UnsupportedOperation(f"File not open for {what}")
        return handle

    def readable(self) -> bool:
        return self._live().readable

    def writable(self) -> bool:
        return self._live().writable

    def seekable(self) -> bool:
        self._live()
        return True

    def fileno(self) -> int:
        """A fake descriptor: the os facade's fsync/fstat/close accept it; real os calls reject it (EBADF)."""
        return self._live().fd

    def isatty(self) -> bool:
        self._live()
        return False

    def readinto(self, buffer: Any) -> int:
        handle = self._for("reading")
        view = memoryview(buffer).cast("B")
        chunk = handle.ops.h_read(handle, len(view))
        view[: len(chunk)] = chunk
        return len(chunk)

    def readall(self) -> bytes:
        handle = self._for("reading")
        return handle.ops.h_read(handle, -1)

    def write(self, data: Any) -> int:
        handle = self._for("writing")
        return handle.ops.h_write(handle, bytes(data))

    def seek(self, offset: int, whence: int = 0) -> int:
        handle = self._live()
        return handle.ops.h_seek(handle, offset, whence)

    def tell(self) -> int:
        return self._live().pos

    def truncate(self, size: int | None = None) -> int:
        handle = self._for("writing")
        return handle.ops.h_truncate(handle, handle.pos if size is None else size)

    def close(self) -> None:
        if not self.closed:
            try:
                if self._closefd:
                    self._h.ops.h_close(self._h)
            finally:
                super().close()

    def __repr__(self) -> str:
        return f"<racefs FakeRawIO name={self.name!r} mode={self.mode!r}>"


_VALID = set("rwxabt+")


def parse_mode(mode: str) -> tuple[int, str, bool]:
    """(os flags, raw mode text, text?) for an ``open()`` mode string; ValueError like CPython on nonsense."""
    chars = set(mode)
    if not chars <= _VALID or len(mode) != len(chars):
        raise ValueError(f"invalid mode: {mode!r}")
    kinds = [c for c in "rwxa" if c in chars]
    if len(kinds) != 1:
        raise ValueError("must have exactly one of create/read/write/append mode")
    if "t" in chars and "b" in chars:
        raise ValueError("can't have text and binary mode at once")
    kind, plus = kinds[0], "+" in chars
    flags = {"r": 0, "w": os.O_CREAT | os.O_TRUNC, "x": os.O_CREAT | os.O_EXCL, "a": os.O_CREAT | os.O_APPEND}[kind]
    if plus:
        flags |= os.O_RDWR
    else:
        flags |= os.O_RDONLY if kind == "r" else os.O_WRONLY
    raw_mode = {"r": "rb", "w": "wb", "x": "xb", "a": "ab"}[kind] + ("+" if plus else "")
    return flags, raw_mode, "b" not in chars


def wrap(raw: FakeRawIO, mode: str, text: bool, buffering: int = -1, encoding: str | None = None,
         errors: str | None = None, newline: str | None = None) -> Any:
    """Buffer and decode a raw file the way ``open()`` does for the same arguments."""
    line_buffering = False
    if buffering == 1 and text:
        buffering, line_buffering = -1, True
    if buffering < 0:
        buffering = io.DEFAULT_BUFFER_SIZE
    if buffering == 0:
        if text:
            raise ValueError("can't have unbuffered text I/O")
        return raw
    return stack(raw, mode, text, buffering, encoding, errors, newline, line_buffering)


def stack(raw: Any, mode: str, text: bool, buffering: int, encoding: str | None, errors: str | None,
          newline: str | None, line_buffering: bool) -> Any:
    """The buffered layer ``open()`` puts over a raw file for its access mode, and the text layer over that, once
    the buffer size is chosen (the fake store's files and the real disk's choose it differently)."""
    if raw.readable() and raw.writable():
        buffered: Any = io.BufferedRandom(raw, buffering)
    elif raw.writable():
        buffered = io.BufferedWriter(raw, buffering)
    else:
        buffered = io.BufferedReader(raw, buffering)
    if not text:
        return buffered
    wrapper = io.TextIOWrapper(buffered, encoding, errors, newline, line_buffering)
    wrapper.mode = mode
    return wrapper


def open_file(store: Store, path: str, mode: str = "r", buffering: int = -1, encoding: str | None = None,
              errors: str | None = None, newline: str | None = None, *, shown: Any = None,
              share_delete: bool = False, delete_on_close: bool = False) -> Any:
    """``open(path, mode, ...)`` on the store: the same argument checks, layering and errors as the real one."""
    flags, raw_mode, text = parse_mode(mode)
    if not text and (encoding is not None or errors is not None or newline is not None):
        raise ValueError("binary mode doesn't take an encoding/errors/newline argument")
    if text and encoding is None:
        encoding = io.text_encoding(None)
    shown_str = os.fspath(shown) if shown is not None else path
    handle = store.open(path, flags, shown=shown_str, mode=mode, api="open",
                        share_delete=share_delete, delete_on_close=delete_on_close)
    raw = FakeRawIO(handle, shown if shown is not None else path, raw_mode)
    if "a" in mode:
        store.h_seek(handle, 0, 2)
    try:
        return wrap(raw, mode, text, buffering, encoding, errors, newline)
    except BaseException:
        raw.close()
        raise


def fdopen(store: Store, fd: int, mode: str = "r", buffering: int = -1, encoding: str | None = None,
           errors: str | None = None, newline: str | None = None, closefd: bool = True) -> Any:
    """``os.fdopen`` / ``open(fd)`` for a fake descriptor (what mkstemp callers do)."""
    _flags, raw_mode, text = parse_mode(mode)
    handle = store.fds.get(fd)
    if handle is None:
        raise OSError(9, os.strerror(9))
    if text and encoding is None:
        encoding = io.text_encoding(None)
    raw = FakeRawIO(handle, fd, raw_mode, closefd=closefd)
    return wrap(raw, mode, text, buffering, encoding, errors, newline)

__racecheck_engine__ = True  # the fake is part of the engine: never instrumented itself
