"""The transport between a child's thread and its proxy thread: messages on the pipe ``multiprocessing.Pipe`` made,
framed as ``Connection`` frames them (so either end may still use the ``Connection``), written and read on the
raw file descriptor.

Why not ``Connection.send``/``recv``: a child's scheduling point is one request and one answer, and its cost is
measured against a plain pipe round trip (``benchmarks/bench_processes.py``). ``Connection.send`` pickles with a
new ``ForkingPickler`` every time (a copy of the reducers' table each: four times the pickling itself), and
``recv`` reads the length and the payload in two system calls. Here one pickler per end is reused (with the same
reducers: torch's tensors and connections travel as through ``Connection``), a message is one write, and a read
takes whatever the pipe holds (a proxy may find a child's one-way notes and its next request together; they are
kept in order).
"""

from __future__ import annotations

import copyreg
import io
import os
import pickle
import struct
from multiprocessing.reduction import ForkingPickler
from typing import Any

from racecheck import runtime

__racecheck_engine__ = True

_HEADER = struct.Struct("!i")
_LARGE = struct.Struct("!Q")
_READ = 65536  # bytes asked for per read: a message of the run is far smaller, a larger one takes more reads
PLAIN = frozenset({str, int, float, bool, type(None), bytes})  # values that pickle the same with or without reducers
_EXTRA = ForkingPickler._extra_reducers  # the stdlib's registry of multiprocessing's reducers (torch adds its own)


def _reducers() -> dict[Any, Any]:
    """``ForkingPickler``'s table: copyreg's and the registered reducers."""
    table = dict(copyreg.dispatch_table)
    table.update(_EXTRA)
    return table


class Wire:
    """One end of a pipe: ``send`` and ``recv`` whole messages, one thread at a time per direction."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.fd = conn.fileno()
        self.pending = bytearray()  # read but not yet taken
        self._buffer = io.BytesIO()
        self._pickler: Any = None
        self._sizes = (-1, -1)  # the reducers' tables' sizes when the pickler was made: a registration since renews it
        self._lock = runtime.real_allocate_lock()  # a child's own threads may call through the same end

    def _dumps(self, message: Any) -> bytes:
        """The message framed: its length (4 bytes, big-endian), then its pickle, written after a placeholder."""
        buffer = self._buffer
        sizes = (len(copyreg.dispatch_table), len(_EXTRA))
        if sizes != self._sizes:
            self._pickler = pickle.Pickler(buffer, pickle.HIGHEST_PROTOCOL)
            self._pickler.dispatch_table = _reducers()
            self._sizes = sizes
        pickler = self._pickler
        buffer.seek(4)
        buffer.truncate()
        pickler.clear_memo()
        try:
            pickler.dump(message)
        except BaseException:
            self._sizes = (-1, -1)  # a pickler's state after a failed dump is not vouched for: a new one next time
            raise
        size = buffer.tell() - 4
        if size > 0x7FFFFFFF:  # as ``Connection`` frames a large message
            return _HEADER.pack(-1) + _LARGE.pack(size) + buffer.getvalue()[4:]
        buffer.seek(0)
        buffer.write(_HEADER.pack(size))
        return buffer.getvalue()

    def send(self, message: Any, plain: bool = False) -> None:
        """Write ``message`` (OSError when the other end is gone; a pickling error before anything is written).
        ``plain``: the caller knows it holds nothing but ``PLAIN`` values and tuples of them, which no reducer of
        multiprocessing's is for: pickled at once, without the reused pickler's bookkeeping."""
        if plain:
            payload = pickle.dumps(message, pickle.HIGHEST_PROTOCOL)
            data = _HEADER.pack(len(payload)) + payload if len(payload) <= 0x7FFFFFFF else (
                _HEADER.pack(-1) + _LARGE.pack(len(payload)) + payload)
        else:
            with self._lock:
                data = self._dumps(message)
        written = os.write(self.fd, data)
        if written < len(data):
            self._rest(data, written)

    def _rest(self, data: bytes, written: int) -> None:
        view = memoryview(data)[written:]
        while view:
            view = view[os.write(self.fd, view):]

    def round_trip(self, message: Any) -> Any:
        """``send(message, plain=True)``, then ``recv()``: a request and its answer, or an answer and the next
        request, in one call with the usual case of both inline (a child's point is two of these: the hot path)."""
        payload = pickle.dumps(message, pickle.HIGHEST_PROTOCOL)
        size = len(payload)
        if size > 0x7FFFFFFF or self.pending:
            self.send(message, True)
            return self.recv()
        data = _HEADER.pack(size) + payload
        written = os.write(self.fd, data)
        if written < len(data):
            self._rest(data, written)
        chunk = os.read(self.fd, _READ)
        if len(chunk) >= 4 and _HEADER.unpack_from(chunk)[0] == len(chunk) - 4:
            return pickle.loads(memoryview(chunk)[4:])
        if not chunk:
            raise EOFError
        self.pending += chunk
        return self._gather()

    def recv(self) -> Any:
        """The next message (EOFError when the other end closed with none pending)."""
        if not self.pending:  # the usual case: one read holds exactly one message
            chunk = os.read(self.fd, _READ)
            if not chunk:
                raise EOFError
            if len(chunk) >= 4 and _HEADER.unpack_from(chunk)[0] == len(chunk) - 4:
                return pickle.loads(memoryview(chunk)[4:])
            self.pending += chunk
        return self._gather()

    def _gather(self) -> Any:
        """The first message in ``pending``, read on until it is whole."""
        pending = self.pending
        while True:
            start, size = 4, -2
            if len(pending) >= 4:
                (size,) = _HEADER.unpack_from(pending)
                if size == -1 and len(pending) >= 12:
                    start, (size,) = 12, _LARGE.unpack_from(pending, 4)
            if size >= 0 and len(pending) >= start + size:
                payload = bytes(pending[start:start + size])
                del pending[:start + size]
                return pickle.loads(payload)
            chunk = os.read(self.fd, _READ)
            if not chunk:
                raise EOFError
            pending += chunk
