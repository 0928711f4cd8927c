"""``multiprocessing.shared_memory.SharedMemory`` served by the parent: a segment is a bytearray in the parent,
named per run (``rc-shm-1``), and every read and write through its buffer is a point on the segment (plain memory
to the relation, so an unordered read and write are a data race, and the saver copying a buffer the trainer
overwrites is an interleaving like any other).

``SharedMemory(create=True, size=n)`` made by a controlled thread makes one; ``SharedMemory(name)`` attaches to
it, in the parent or in a child (whose call is a request to the parent's directory of segments). ``buf`` is a view
whose item and slice reads return copies (``bytes`` for a slice): ``bytes(shm.buf[:n])`` and
``shm.buf[a:b] = data`` work as with the real one; handing the buffer to numpy does not (no buffer protocol).
"""

from __future__ import annotations

import multiprocessing.shared_memory as _real_shm
import sys
from typing import Any

from racecheck import runtime
from racecheck.control.memory_hooks import no_items
from racecheck.control.processes import link
from racecheck.control.processes.link import registry_of, routed
from racecheck.control.processes.models import Served
from racecheck.runtime import RunContract
from racecheck.runtime.access import READ, WRITE, on
from racecheck.runtime.steps import Obj, ObjKind
from racecheck.sync.primitive import Primitive

__racecheck_engine__ = True

RealSharedMemory = _real_shm.SharedMemory
DIRECTORY = "shm directory"  # the id of the run's directory of segments


class Segment(Served, Primitive):
    """One shared memory segment of the run."""

    _kind = "shm"
    _obj_kind = ObjKind.MEMORY

    def __init__(self, run: RunContract, name: str, size: int) -> None:
        Primitive.__init__(self, run, f"shm {name}")
        self.data = bytearray(size)
        self.shm_name = name
        self.enrol(run, self._name)

    def _accesses(self) -> None:
        self._read, self._write = on(self._obj, READ), on(self._obj, WRITE)

    @routed
    def read(self, index: Any) -> Any:
        self._run.schedule(f"read {self._name}[{_span(index)}]", access=self._read)
        value = self.data[index]
        return bytes(value) if isinstance(index, slice) else value

    @routed
    def write(self, index: Any, value: Any) -> None:
        self._run.schedule(f"write {self._name}[{_span(index)}]", access=self._write)
        if isinstance(index, slice):
            view = memoryview(self.data)[index]
            if len(view) != len(memoryview(value).cast("B")):
                raise ValueError("memoryview assignment: lvalue and rvalue have different structures")
            view[:] = memoryview(value).cast("B")
        else:
            self.data[index] = value

    @routed
    def length(self) -> int:
        return len(self.data)


def _span(index: Any) -> str:
    if isinstance(index, slice):
        return f"{'' if index.start is None else index.start}:{'' if index.stop is None else index.stop}"
    return str(index)


class Buffer:
    """``SharedMemory.buf``: item and slice access as points on the segment."""

    def __init__(self, segment: Segment) -> None:
        self.segment = segment

    def __getitem__(self, index: Any) -> Any:
        return self.segment.read(index)

    def __setitem__(self, index: Any, value: Any) -> None:
        self.segment.write(index, value)

    def __len__(self) -> int:
        return self.segment.length()

    def tobytes(self) -> bytes:
        return self.segment.read(slice(None))

    def release(self) -> None:
        """Nothing to release: the view holds no export."""


no_items(Buffer)  # its items are the segment's points: the memory hooks would record each again as Buffer#1[0]


class SharedMemory:
    """What ``SharedMemory(...)`` returns inside a run: the segment's name, size and buffer, per process."""

    def __init__(self, segment: Segment, name: str, size: int) -> None:
        self.segment = segment
        self.name = name
        self.size = size
        self.buf: Buffer | None = Buffer(segment)

    def close(self) -> None:
        self.buf = None

    def unlink(self) -> None:
        directory_call("unlink", self.name)

    def __reduce__(self) -> tuple:
        return (attach, (self.name,))

    def __repr__(self) -> str:
        return f"SharedMemory({self.name!r}, size={self.size})"


class Directory(Served):
    """The run's segments by name: create, attach, unlink (a point on the directory, as a file's name is)."""

    def __init__(self, run: RunContract) -> None:
        self.run = run
        self.segments: dict[str, Segment] = {}
        self.made = 0
        names = Obj(ObjKind.MEMORY, "shm names")  # which names exist: created, looked up, unlinked
        self.look, self.change = on(names, READ), on(names, WRITE)
        self.enrol(run, DIRECTORY)

    @routed
    def open(self, name: str | None, create: bool, size: int) -> tuple[Segment, str, int]:
        self.run.schedule(f"shm {'create' if create else 'attach'} {name or ''}".rstrip(),
                          access=self.change if create else self.look)
        if create:
            if size <= 0:
                raise ValueError("'size' must be a positive number different from zero")
            if name is None:
                self.made += 1
                name = f"rc-shm-{self.made}"
            if name in self.segments:
                raise FileExistsError(17, "File exists", name)
            self.segments[name] = Segment(self.run, name, size)
        segment = self.segments.get(name)
        if segment is None:
            raise FileNotFoundError(2, "No such file or directory", name)
        return segment, name, len(segment.data)

    @routed
    def unlink(self, name: str) -> None:
        self.run.schedule(f"shm unlink {name}", access=self.change)
        if self.segments.pop(name, None) is None:
            raise FileNotFoundError(2, "No such file or directory", name)


def directory_of(run: RunContract) -> Directory:
    registry = registry_of(run)
    found = registry.models.get(DIRECTORY)
    return found if found is not None else Directory(run)


def directory_call(method: str, *args: Any) -> Any:
    if link.LINK is not None:
        return link.LINK.call(DIRECTORY, method, args, {})
    return getattr(directory_of(runtime.current_run()), method)(*args)


def attach(name: str) -> SharedMemory:
    return SharedMemory(*directory_call("open", name, False, 0))


def shared_memory(name: str | None = None, create: bool = False, size: int = 0) -> Any:
    """``SharedMemory(...)``: a segment of the run for a controlled caller or a child of the run, else the real
    class."""
    run = runtime.current_run()
    if link.LINK is None and (run is None or runtime.current_thread_record() is None or run.aborting):
        return RealSharedMemory(name, create, size)
    return SharedMemory(*directory_call("open", name, create, size))


def install_in_child() -> None:
    """In a spawned child (a fresh interpreter, nothing patched): ``SharedMemory`` is the run's, wherever the
    child's modules bound the class."""
    _real_shm.SharedMemory = shared_memory
    for module in list(sys.modules.values()):
        namespace = getattr(module, "__dict__", None)
        if not namespace or str(namespace.get("__name__", "")).startswith("multiprocessing"):
            continue
        for key, value in list(namespace.items()):
            if value is RealSharedMemory:
                namespace[key] = shared_memory
