"""One fake filesystem for every process of a run: a child's file operations on the mounted root are performed by
its proxy on the parent's store.

A child of the run holds a ``RemoteStore`` where the parent's run holds its ``Store`` (``run.resources``), so the
stand-ins (``os_calls``, ``handles``, ``shutil_calls``, the fsspec adapter) run in the child unchanged: they find
a store for mounted paths and call its operations, and each operation is a request (``shares.request``) that the
proxy performs on the parent's store, on the proxy thread. So the child's open, read, write, fsync, rename, remove
and listdir are points of its thread with the accesses a thread's would have, the store's faults and crashes are
drawn there (a power loss raised on the proxy ends the run, and every process of the run goes down with it: each
proxy kills its child on the way out), and one token replays the whole schedule.

An open file description stays in the parent; the child holds a ``RemoteHandle`` (its descriptor number, access
mode and position, updated by every answer) and the parent keeps the child's handles by descriptor, to close
what the child left open when it ends (as the OS does at a process's exit, with no point of its own: the close is
part of the child's last step).
"""

from __future__ import annotations

from typing import Any

from racecheck import runtime
from racecheck.control.processes import shares
from racecheck.fakefs.semantics import semantics_for
from racecheck.fakefs.spec import FakeFS
from racecheck.fakefs.store import Handle, Inode
from racecheck.runtime import RunContract

__racecheck_engine__ = True  # the fake is part of the engine: never instrumented itself

KEY = "fakefs"  # run.resources key of the run's store (``racecheck.fakefs.begin_run``)
HELD = "fakefs.children"  # run.resources key: {label: {fd: Handle}} of the handles children hold

# The store's operations a child calls, and which of their arguments is a handle (then sent as its descriptor).
NAMESPACE_OPS = ("remove", "rename", "mkdir", "rmdir", "listdir", "stat", "chmod", "utime", "truncate_path",
                 "temp_name", "sync", "dir_path")
HANDLE_OPS = ("h_write", "h_read", "h_seek", "h_truncate", "h_fsync", "h_fstat", "h_close")


class RemoteHandle:
    """A child's view of an open file description in the parent's store: what ``handles.FakeRawIO`` and the
    stand-ins read of a handle. ``ops`` is the child's store, through which every operation goes."""

    __slots__ = ("ops", "fd", "path", "shown", "readable", "writable", "append", "mode", "pos", "closed")

    def __init__(self, ops: RemoteStore, state: tuple) -> None:
        self.ops = ops
        self.fd, self.path, self.shown, self.readable, self.writable, self.append, self.mode = state[:7]
        self.pos, self.closed = state[7], state[8]


def handle_state(handle: Handle) -> tuple:
    return (handle.fd, handle.path, handle.shown, handle.readable, handle.writable, handle.append, handle.mode,
            handle.pos, handle.closed)


def detached(node: Inode) -> Inode:
    """A copy of ``node`` that carries what ``stat_result`` and a listing read of it (kind, size, times, links),
    not its subtree or handles: what a listing's entries become for a child."""
    copy = Inode(node.ino, node.is_dir, node.mtime, node.key)
    copy.data = bytearray(node.data)
    copy.mode, copy.ctime, copy.linked = node.mode, node.ctime, node.linked
    for name, (shown, child) in node.entries.items():
        stub = Inode(child.ino, child.is_dir, child.mtime, child.key)
        copy.entries[name] = (shown, stub)
    return copy


class RemoteStore:
    """The run's store as a child of the run holds it: the store's fixed facts (root, spec, semantics) and its
    operations, each a request to the child's proxy."""

    def __init__(self, spec: FakeFS) -> None:
        self.spec = spec
        self.root = spec.root
        self.fds: dict[int, RemoteHandle] = {}
        self.sem = semantics_for(spec.semantics)

    def __getstate__(self) -> dict[str, Any]:
        return {"spec": self.spec}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["spec"])

    def open(self, path: str, flags: int, **kwargs: Any) -> RemoteHandle:
        handle = RemoteHandle(self, shares.request(KEY, "open", path, flags, **kwargs))
        self.fds[handle.fd] = handle
        return handle

    def listdir(self, path: str, **kwargs: Any) -> list[tuple[str, Inode]]:
        return shares.request(KEY, "listdir", path, **kwargs)

    def _handle_op(self, method: str, handle: RemoteHandle, *args: Any) -> Any:
        value, state = shares.request(KEY, method, handle.fd, *args)
        handle.pos, handle.closed = state[7], state[8]
        if handle.closed:
            self.fds.pop(handle.fd, None)
        return value


def _namespace_op(method: str) -> Any:
    def call(self: RemoteStore, *args: Any, **kwargs: Any) -> Any:
        return shares.request(KEY, method, *args, **kwargs)

    call.__name__ = method
    return call


def _handle_method(method: str) -> Any:
    def call(self: RemoteStore, handle: RemoteHandle, *args: Any) -> Any:
        return self._handle_op(method, handle, *args)

    call.__name__ = method
    return call


for _method in NAMESPACE_OPS:
    if _method != "listdir":
        setattr(RemoteStore, _method, _namespace_op(_method))
for _method in HANDLE_OPS:
    setattr(RemoteStore, _method, _handle_method(_method))


class StoreShare:
    """The run's store as a share of every process of the run (``racecheck.control.processes.shares``)."""

    def for_child(self, store: Any, label: str) -> RemoteStore:
        return RemoteStore(store.spec)

    def serve(self, run: RunContract, store: Any, label: str, method: str, args: tuple, kwargs: dict) -> Any:
        held = run.resources.setdefault(HELD, {}).setdefault(label, {})
        if method == "open":
            handle = store.open(*args, **kwargs)
            held[handle.fd] = handle
            return handle_state(handle)
        if method in HANDLE_OPS:
            handle = held.get(args[0])
            if handle is None:
                raise OSError(9, "Bad file descriptor")
            value = getattr(store, method)(handle, *args[1:])
            if handle.closed:
                del held[handle.fd]
            return value, handle_state(handle)
        if method == "listdir":
            return [(name, detached(node)) for name, node in store.listdir(*args, **kwargs)]
        if method not in NAMESPACE_OPS:
            raise ValueError(f"racecheck: a child asked the fake filesystem for {method!r}")
        return getattr(store, method)(*args, **kwargs)

    def release(self, run: RunContract, store: Any, label: str) -> None:
        """The child is gone: the OS closes its descriptors (nothing of what its buffers held is written)."""
        held = run.resources.get(HELD, {}).pop(label, {})
        for fd in sorted(held):
            handle = held[fd]
            if not handle.closed:
                _close_quietly(store, handle)


def _close_quietly(store: Any, handle: Handle) -> None:
    """Close ``handle`` as a process's exit does: no point of its own (the store's run is not the caller's)."""
    bound, rec = runtime.current_run(), runtime.current_thread_record()
    runtime.bind(None, None)
    try:
        store.h_close(handle)
    finally:
        runtime.bind(bound, rec)


def register() -> None:
    """Make the run's store a share of its child processes (called when the fake filesystem activates)."""
    shares.register(KEY, StoreShare())
