"""``open()`` on the real disk for a controlled thread that watches files: the real file, its reads, writes and close
scheduling points.

The file object is built as CPython's ``open()`` builds it: a raw ``FileIO`` (here a subclass whose operations
make a point first), under the real ``BufferedReader``/``BufferedWriter``/``BufferedRandom`` and ``TextIOWrapper``,
with the same buffer size and line buffering. So ``isinstance`` checks hold, and a point happens where data meets
the kernel, as another thread sees it: bytes written through a buffered file are a point when the buffer flushes
or the file closes, not at every ``write`` call (``racecheck.fakefs.handles`` layers the fake's files the same way).
"""

from __future__ import annotations

import builtins
import io
import os
from typing import Any

from racecheck.fakefs.handles import parse_mode, stack
from racecheck.fakefs.realdisk import current, enter, name_of
from racecheck.runtime.access import CREATE, READ, WRITE

__racecheck_engine__ = True

real_open = builtins.open


class DiskFileIO(io.FileIO):
    """``io.FileIO`` whose reads, writes, truncation and close are points of the calling thread's run."""

    def __init__(self, file: Any, mode: str, closefd: bool, opener: Any, name: str) -> None:
        super().__init__(file, mode, closefd, opener)
        self._racecheck_name = name

    def _at(self, op: str, kind: str) -> None:
        disk = current()
        if disk is not None and not self.closed:
            name = self._racecheck_name
            enter(disk, op, [(name, name, kind, False, False)])

    def readinto(self, buffer: Any) -> Any:
        self._at("read", READ)
        return super().readinto(buffer)

    def readall(self) -> bytes:
        self._at("read", READ)
        return super().readall()

    def read(self, size: int = -1) -> Any:
        self._at("read", READ)
        return super().read(size)

    def write(self, data: Any) -> Any:
        self._at("write", WRITE)
        return super().write(data)

    def truncate(self, size: int | None = None) -> int:
        self._at("truncate", WRITE)
        return super().truncate(size)

    def close(self) -> None:
        if not self.closed:
            disk = current()
            if disk is not None:
                if self.closefd:
                    disk.fds.pop(self.fileno(), None)
                self._at("close", READ)
        super().close()


def disk_open(file: Any, mode: str = "r", buffering: int = -1, encoding: str | None = None,
              errors: str | None = None, newline: str | None = None, closefd: bool = True,
              opener: Any = None) -> Any:
    """``open()``: for a controlled thread of a run that watches files, the real file with its points; otherwise,
    and for a descriptor the run did not open (a pipe, a file opened before the run), the real ``open``."""
    disk = current()
    named = name_of(disk, file) if disk is not None else None
    if named is None or not isinstance(mode, str):
        return real_open(file, mode, buffering, encoding, errors, newline, closefd, opener)
    _flags, raw_mode, text = parse_mode(mode)
    if not text and (encoding is not None or errors is not None or newline is not None):
        which = "an encoding" if encoding is not None else ("an errors" if errors is not None else "a newline")
        raise ValueError(f"binary mode doesn't take {which} argument")
    if text and buffering == 0:
        raise ValueError("can't have unbuffered text I/O")
    name = named[0]
    creates = raw_mode[0] in "wxa"
    enter(disk, "open", [(name, named[1], CREATE if creates else READ, creates, False)])
    raw = DiskFileIO(file, raw_mode, closefd, opener, name)
    try:
        if not isinstance(file, int) and closefd:
            disk.fds[raw.fileno()] = name
        return _layers(raw, mode, text, buffering, encoding, errors, newline)
    except BaseException:
        raw.close()
        raise


def _layers(raw: DiskFileIO, mode: str, text: bool, buffering: int, encoding: str | None, errors: str | None,
            newline: str | None) -> Any:
    """The buffered and text layers over ``raw``, as ``open()`` chooses them."""
    line_buffering = False
    if buffering == 1 or (buffering < 0 and raw.isatty()):
        buffering, line_buffering = -1, True
    if buffering < 0:
        buffering = io.DEFAULT_BUFFER_SIZE
        try:
            size = os.fstat(raw.fileno()).st_blksize
        except (OSError, AttributeError):
            size = 0
        if size > 1:
            buffering = size
    if buffering == 0:
        return raw
    if text and encoding is None:
        encoding = io.text_encoding(None)
    return stack(raw, mode, text, buffering, encoding, errors, newline, line_buffering)
