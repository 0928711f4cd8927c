"""Let ``torch.save(obj, "/racefs/x.ckpt")`` and ``torch.load("/racefs/x.ckpt")`` reach the store.

``torch.load(path)`` opens the file with Python's ``open`` (``torch.serialization._open_file``), so instrumenting
``torch.serialization`` with the builtin-``open`` stand-in is enough. ``torch.save(path)`` is different: for an
ASCII path it hands the *name* to C++ (``PyTorchFileWriter(name)``), which writes to the real disk, out of reach of
any Python patch. So, once ``torch.serialization`` is loaded, we also register a stand-in for its module global
``_open_zipfile_writer`` that, for mounted paths, opens the fake file and uses torch's own buffer writer, and for a
real path makes the real disk's point of creating and writing it (``racecheck.fakefs.realdisk``).
"""

from __future__ import annotations

import sys
from typing import Any

from racecheck.fakefs import realdisk
from racecheck.fakefs.mount import target

_registered = False


class _Sink:
    """What torch's C++ writer writes through: the fake file while the save is open, nothing once it is closed.

    ``PyTorchFileWriter`` finishes its archive in its destructor when nobody called ``write_end_of_file`` (a save
    stopped by an exception, or a thread of a run being stopped, unwound at a point inside the save). That
    destructor runs whenever the writer is freed, and a Python error there cannot be raised: pybind11 calls
    ``std::terminate``, so writing to the closed fake file would abort the interpreter. After ``close`` the
    sink takes every write and drops it, as the real file, closed, would no longer receive them.
    """

    __slots__ = ("_file", "_closed")

    def __init__(self, file: Any) -> None:
        self._file = file
        self._closed = False

    def write(self, data: Any) -> int:
        if self._closed:
            return len(memoryview(data))
        return self._file.write(data)

    def seek(self, offset: int, whence: int = 0) -> int:
        return offset if self._closed else self._file.seek(offset, whence)

    def tell(self) -> int:
        return 0 if self._closed else self._file.tell()

    def flush(self) -> None:
        if not self._closed:
            self._file.flush()

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._file.close()


def register() -> bool:
    """Register the torch.serialization stand-in if torch is loaded (idempotent); True when registered."""
    global _registered
    if _registered:
        return True
    ser = sys.modules.get("torch.serialization")
    if ser is None or not hasattr(ser, "_open_zipfile_writer_buffer"):
        return False
    from racecheck.control import instrument
    from racecheck.fakefs.os_calls import fake_open

    real_writer = ser._open_zipfile_writer

    class _FakeFileZipWriter(ser._open_zipfile_writer_buffer):
        """torch's buffer writer over a fake file that it also closes, through a ``_Sink`` (see there)."""

        def __init__(self, path: Any) -> None:
            self._fake_file = fake_open(path, "wb")
            self._sink = _Sink(self._fake_file)
            try:
                super().__init__(self._sink)
            except BaseException:
                self._sink.close()
                raise

        def __exit__(self, *args: Any) -> None:
            try:
                super().__exit__(*args)
            finally:
                self._sink.close()

    def _open_zipfile_writer(name_or_buffer: Any) -> Any:
        if isinstance(name_or_buffer, (str, bytes)) or hasattr(name_or_buffer, "__fspath__"):
            if target(name_or_buffer) is not None:
                return _FakeFileZipWriter(name_or_buffer)
            realdisk.writes(name_or_buffer)  # C++ writes the real file: one point, as its creation
        return real_writer(name_or_buffer)

    for group in ("fakefs", "files"):
        instrument.register_swap(real_writer, _open_zipfile_writer, group)
    _registered = True
    return True

__racecheck_engine__ = True  # the fake is part of the engine: never instrumented itself
