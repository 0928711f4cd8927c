"""A locked, ordered replacement for Lightning's ``AsyncCheckpointIO``.

Lightning's stock plugin submits each save to a ``ThreadPoolExecutor`` and runs ``remove_checkpoint``
directly on the caller thread, with no connection between the two. A remove can therefore run before the
save of the same file has been written (the remove finds nothing, then the write creates the file: a leaked
checkpoint), or while it is being written (``PermissionError`` / WinError 32 on Windows). See Lightning
issue #14035 and ``docs/fixed_impl.md``.

The fix here: every file operation (save, remove) goes through one ordered queue served by one worker thread,
so operations on the filesystem never overlap and apply in call order. The caller thread only snapshots the
checkpoint and edits the queue (cancel a queued save, collapse a superseded one, defer a remove).

Threading primitives are looked up through the module global ``threading`` at call time (never captured at
import), so the racecheck engine can instrument this module by swapping that name; the same holds for ``os``
and ``open`` used by the local atomic writer.
"""

from __future__ import annotations

import io
import itertools
import logging
import os
import posixpath
import re
import sys
import threading
from collections import deque
from collections.abc import Callable
from typing import Any, Optional, Union

import fsspec
import torch
from fsspec.implementations.local import LocalFileSystem
from lightning.fabric.plugins import CheckpointIO, TorchCheckpointIO
from lightning.pytorch.plugins.io.wrapper import _WrappingCheckpointIO
from lightning_utilities.core.apply_func import apply_to_collection
from typing_extensions import override

log = logging.getLogger(__name__)

_QUEUED, _RUNNING, _DONE, _CANCELLED = "queued", "running", "done", "cancelled"

# Temp files are hidden and do not end in ".ckpt", so ``glob("*.ckpt")`` (and Lightning's "last" lookup) never
# matches a partial write. Pid + process-wide counter keep names unique across instances and processes.
_TMP_RE = re.compile(r"^\..+\.tmp-(\d+)-\d+$")
_tmp_counter = itertools.count()


def _tmp_name(final_name: str) -> str:
    return f".{final_name}.tmp-{os.getpid()}-{next(_tmp_counter)}"


def _path_key(path: Any) -> str:
    """One spelling per file, so ``a.ckpt`` and ``/cwd/a.ckpt`` match when the queue is searched."""
    p = os.fspath(path)
    if "://" in p:
        return p
    return os.path.abspath(p)


class _Op:
    """One queued file operation. ``state`` moves queued -> running -> done, or queued -> cancelled."""

    __slots__ = ("kind", "path", "key", "checkpoint", "storage_options", "state", "buffers")

    def __init__(self, kind: str, path: Any, checkpoint: Any = None, storage_options: Any = None) -> None:
        self.kind = kind  # "save" or "remove"
        self.path = path
        self.key = _path_key(path)
        self.checkpoint = checkpoint
        self.storage_options = storage_options
        self.state = _QUEUED
        self.buffers: list[torch.Tensor] = []  # pooled snapshot storage, returned to the pool when done

    def __repr__(self) -> str:
        return f"_Op({self.kind} {self.path} {self.state})"


class LockedAsyncCheckpointIO(_WrappingCheckpointIO):
    """Asynchronous checkpoint saving with the ordering guarantees Lightning's ``AsyncCheckpointIO`` lacks.

    Drop-in: ``Trainer(plugins=[LockedAsyncCheckpointIO()])``. Like the stock plugin it wraps another
    ``CheckpointIO`` (``None`` lets the strategy plug in ``TorchCheckpointIO``). All filesystem writes and
    removes run on a single background worker, in call order.

    Guarantees:

    1. ``remove_checkpoint(p)`` while a save of ``p`` is still queued cancels that save; while ``p`` is being
       written, the removal waits (on the worker, behind the write) and then deletes. A removed path is never
       left on disk by a late write, and a remove never touches a file that has an open write handle.
    2. Saves to the same path apply in call order: the last call wins. A queued save superseded by a newer
       save of the same path is dropped (the newer snapshot takes its place in the queue).
    3. A remove issued after saves of other paths takes effect only after those saves have committed (deferred
       deletion): top-k eviction ``save(new); remove(old)`` never leaves zero complete checkpoints.
    4. ``load_checkpoint(p)`` with a pending save (or remove) of ``p`` waits for it and returns what was
       saved.
    5. The checkpoint is snapshotted on the caller thread: tensors are detached and copied (to CPU by default,
       ``snapshot_device=None`` keeps their device), so later in-place updates never reach the file and
       accelerator memory does not grow per queued save. Containers are rebuilt; other leaves are shared.
    6. At most ``max_pending`` snapshots exist at once (queued or being written); ``save_checkpoint`` blocks
       (backpressure) before snapshotting until a slot is free.
    7. Atomic writes when the wrapped IO is a plain ``TorchCheckpointIO``: the checkpoint is written to a
       hidden temp file ``.<name>.tmp-<pid>-<n>`` in the same directory (flush + fsync for local files),
       renamed over the final name (``os.replace`` / ``fs.mv``), then the directory is fsynced where the OS
       allows. Stray temp files of other processes (a crash) are deleted on the first save into a
       directory. Any other wrapped ``CheckpointIO`` does its own write (atomicity is then its business), but
       guarantees 1-6, 8, 9 still hold.
    8. A background error is raised at the next call (save, remove, load, ``wait``) or at ``teardown()``,
       exactly once, with its original traceback. Removes that were queued behind a failed save are dropped,
       so a failure never deletes a good checkpoint. ``teardown()`` called while another exception is
       propagating (Lightning tears down in ``except``) logs the background error instead of masking it.
    9. ``teardown()`` flushes every pending save and remove in order; the object is reusable afterwards (fit,
       validate, fit again). The worker thread exists only while there is work.
    10. Works with any fsspec filesystem (local, ``memory://``, ...). Lightning's strategies call save/remove
        only on global rank zero; other ranks never start a worker thread.

    ``wait()`` (alias ``flush()``) is a barrier: it returns once everything queued before it is applied.

    Args:
        checkpoint_io: the ``CheckpointIO`` that serialises; ``None`` = the strategy's default.
        max_pending: how many snapshots may be queued or in writing at once (>= 1).
        snapshot_device: where tensor snapshots live; ``"cpu"`` (default) or ``None`` to keep each
            tensor's device.
        reuse_buffers: when this plugin does the write itself (plain ``TorchCheckpointIO``), reuse the
            storage of written snapshots for the next ones: copying into memory that is already mapped is ~2.5x
            faster than allocating (page faults). Up to ``max_pending`` snapshots' worth is kept between saves
            and freed at ``teardown()``. Never used when another ``CheckpointIO`` writes, since it could keep
            references to the tensors after returning.

    """

    def __init__(
        self,
        checkpoint_io: Optional[CheckpointIO] = None,
        max_pending: int = 2,
        snapshot_device: Optional[Union[str, torch.device]] = "cpu",
        reuse_buffers: bool = True,
    ) -> None:
        super().__init__(checkpoint_io)
        if max_pending < 1:
            raise ValueError(f"max_pending must be >= 1, got {max_pending}")
        self.max_pending = max_pending
        self.snapshot_device = torch.device(snapshot_device) if snapshot_device is not None else None
        self.reuse_buffers = reuse_buffers
        self._pool: dict[tuple, list[torch.Tensor]] = {}  # (dtype, device, numel) -> free flat buffers
        # Created here, looked up through the module global at call time (instrumentable).
        self._cond = threading.Condition()
        self._ops: deque[_Op] = deque()
        self._slots = 0  # save ops in the queue + slots reserved by callers that are snapshotting
        self._thread: Optional[threading.Thread] = None
        self._error: Optional[BaseException] = None
        self._cleaned_dirs: set[str] = set()

    # ------------------------------------------------------------------ public API

    @override
    def save_checkpoint(
        self, checkpoint: dict[str, Any], path: Any, storage_options: Optional[Any] = None
    ) -> None:
        """Snapshot ``checkpoint`` now and queue its write to ``path``; returns before the write.

        Blocks first while ``max_pending`` snapshots exist, so memory stays bounded (guarantee 6).
        """
        with self._cond:
            self._raise_pending_error()
            while self._slots >= self.max_pending:
                self._cond.wait()
                self._raise_pending_error()
            self._slots += 1  # reserve before snapshotting: the snapshot is the memory we bound
        op = _Op("save", path, None, storage_options)
        pooled = self.reuse_buffers and storage_options is None and type(self.checkpoint_io) is TorchCheckpointIO
        try:
            op.checkpoint = self._snapshot(checkpoint, op.buffers if pooled else None)
        except BaseException:
            with self._cond:
                self._slots -= 1
                self._release(op)
                self._cond.notify_all()
            raise
        with self._cond:
            # Guarantee 2: a still-queued save of the same path is superseded. The new snapshot takes the old
            # slot, so removes deferred behind the old save still wait for a complete file at this path.
            for queued in self._ops:
                if queued.kind == "save" and queued.key == op.key and queued.state == _QUEUED:
                    self._release(queued)
                    queued.checkpoint, queued.storage_options = op.checkpoint, storage_options
                    queued.buffers = op.buffers
                    self._slots -= 1
                    self._cond.notify_all()
                    return
            self._enqueue(op)

    @override
    def remove_checkpoint(self, path: Any) -> None:
        """Cancel queued saves of ``path`` and queue its deletion behind everything queued before.

        Returns at once; the file is gone once the operations ahead of it (including a save of ``path``
        that is being written now) have been applied. Call ``wait()`` to observe that.
        """
        key = _path_key(path)
        with self._cond:
            self._raise_pending_error()
            for queued in [o for o in self._ops if o.key == key and o.kind == "save" and o.state == _QUEUED]:
                self._ops.remove(queued)
                queued.state = _CANCELLED
                self._release(queued)
                self._slots -= 1
            self._cond.notify_all()
            # Still queued (not run inline) even when idle: one thread touches the filesystem, and an existing
            # committed file at ``path`` must go only after the saves queued before this call (guarantee 3).
            self._enqueue(_Op("remove", path))

    @override
    def load_checkpoint(self, path: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """Load ``path`` once every queued operation on it has been applied (guarantee 4)."""
        key = _path_key(path)
        with self._cond:
            self._raise_pending_error()
            mine = [o for o in self._ops if o.key == key]
            while any(o.state in (_QUEUED, _RUNNING) for o in mine):
                self._cond.wait()
            self._raise_pending_error()
        assert self.checkpoint_io is not None
        return self.checkpoint_io.load_checkpoint(path, *args, **kwargs)

    def exists(self, path: Any) -> bool:
        """Whether ``path`` will exist once the queue is applied: the last queued save/remove of ``path``
        decides; otherwise the filesystem does. Lets ``ModelCheckpoint`` pick names without flushing."""
        key = _path_key(path)
        with self._cond:
            for op in reversed(self._ops):
                if op.key == key and op.state in (_QUEUED, _RUNNING):
                    return op.kind == "save"
        fs, urlpath = fsspec.core.url_to_fs(os.fspath(path))
        return bool(fs.exists(urlpath))

    def wait(self) -> None:
        """Barrier: return once every operation queued before this call is applied; raise a background error
        if one is pending."""
        with self._cond:
            mine = list(self._ops)
            while any(o.state in (_QUEUED, _RUNNING) for o in mine):
                self._cond.wait()
            self._raise_pending_error()

    flush = wait

    @override
    def teardown(self) -> None:
        """Flush all pending work in order, stop the worker, then surface a background error (guarantees 8,
        9)."""
        with self._cond:
            while self._ops:
                self._cond.wait()
            thread, error, self._error = self._thread, self._error, None
        if thread is not None and thread is not threading.current_thread():
            thread.join()  # the worker leaves as soon as the queue is empty; this waits for it to be gone
        # Reset per-run state so the object can serve the next fit/validate; free the pooled snapshots.
        self._cleaned_dirs = set()
        self._pool = {}
        inner = self.checkpoint_io
        if inner is not None:
            inner.teardown()
        if error is None:
            return
        in_flight = sys.exc_info()[1]
        if in_flight is not None and in_flight is not error:
            # Never mask the exception already propagating (Lightning calls teardown from ``except``).
            log.error(
                "Background checkpoint error during teardown (not raised: another exception is in flight)",
                exc_info=(type(error), error, error.__traceback__),
            )
            if hasattr(in_flight, "add_note"):
                in_flight.add_note(f"Also, a background checkpoint save failed: {error!r}")
            return
        raise error

    # ------------------------------------------------------------------ caller-side helpers

    def _snapshot(self, checkpoint: Any, buffers: Optional[list[torch.Tensor]] = None) -> Any:
        """Copy every tensor (detached; onto ``snapshot_device``); rebuild the containers around them.

        With ``buffers`` (a list), plain dense tensors are copied into storage taken from the pool (or newly
        allocated), and that storage is appended to ``buffers`` so it can go back to the pool after the write.
        """
        target = self.snapshot_device

        def copy(t: torch.Tensor) -> torch.Tensor:
            t = t.detach()
            device = t.device if target is None else target
            plain = type(t) is torch.Tensor and t.layout == torch.strided and not t.is_quantized
            if buffers is None or not plain:
                return t.clone() if device == t.device else t.to(device, copy=True)
            key = (t.dtype, device, t.numel())
            with self._cond:
                free = self._pool.get(key)
                flat = free.pop() if free else None
            if flat is None:
                flat = torch.empty(t.numel(), dtype=t.dtype, device=device)
            buffers.append(flat)
            return flat.view(t.shape).copy_(t)

        return apply_to_collection(checkpoint, torch.Tensor, copy)

    def _release(self, op: _Op) -> None:
        """Drop ``op``'s snapshot; its pooled storage becomes reusable (called with the lock held)."""
        op.checkpoint = None
        if self.reuse_buffers:
            for flat in op.buffers:
                self._pool.setdefault((flat.dtype, flat.device, flat.numel()), []).append(flat)
        op.buffers = []

    def _raise_pending_error(self) -> None:
        """Raise a recorded background error once (called with the lock held)."""
        error, self._error = self._error, None
        if error is not None:
            raise error  # ``raise`` keeps the worker's traceback frames and adds the caller's

    def _enqueue(self, op: _Op) -> None:
        """Append ``op`` and make sure a worker runs (called with the lock held)."""
        self._ops.append(op)
        if self._thread is None:
            thread = threading.Thread(target=self._worker, name="LockedAsyncCheckpointIO", daemon=False)
            try:
                thread.start()
            except BaseException:  # e.g. "can't start new thread" at interpreter shutdown: nothing queued
                self._ops.pop()
                self._release(op)
                if op.kind == "save":
                    self._slots -= 1
                raise
            self._thread = thread
        self._cond.notify_all()

    # ------------------------------------------------------------------ worker side

    def _worker(self) -> None:
        """Apply the queue head until the queue is empty, then exit (a new worker starts on the next enqueue).

        The head stays in the queue while it runs, so ``load``/``wait``/``teardown`` see it as pending.
        """
        while True:
            with self._cond:
                if not self._ops:
                    self._thread = None
                    self._cond.notify_all()
                    return
                op = self._ops[0]
                op.state = _RUNNING
            error: Optional[BaseException] = None
            try:
                self._apply(op)
            except BaseException as ex:  # recorded and re-raised on the caller thread
                error = ex
            with self._cond:
                self._ops.popleft()
                op.state = _DONE
                self._release(op)
                if op.kind == "save":
                    self._slots -= 1
                if error is not None:
                    self._record_failure(error)
                self._cond.notify_all()

    def _record_failure(self, error: BaseException) -> None:
        """Keep the first error; drop every remove queued behind the failure (called with the lock held).

        Those removes were issued believing the failed save would commit; running them could delete the only
        good checkpoint. Later queued saves still run: more complete checkpoints never hurt.
        """
        if self._error is None:
            self._error = error
        else:
            log.error(
                "Further background checkpoint error", exc_info=(type(error), error, error.__traceback__)
            )
        for queued in [o for o in self._ops if o.kind == "remove" and o.state == _QUEUED]:
            self._ops.remove(queued)
            queued.state = _CANCELLED
            log.warning("Not removing %s: an earlier checkpoint save failed", queued.path)

    def _apply(self, op: _Op) -> None:
        inner = self.checkpoint_io
        assert inner is not None
        if op.kind == "remove":
            inner.remove_checkpoint(op.path)
        elif type(inner) is TorchCheckpointIO and op.storage_options is None:
            self._atomic_write(op.checkpoint, op.path)
        else:
            inner.save_checkpoint(op.checkpoint, op.path, storage_options=op.storage_options)

    def _atomic_write(self, checkpoint: Any, path: Any) -> None:
        """Temp file in the same directory -> flush + fsync -> rename over the final name -> fsync dir."""
        fs, urlpath = fsspec.core.url_to_fs(os.fspath(path))
        if isinstance(fs, LocalFileSystem):
            self._atomic_write_local(checkpoint, os.path.abspath(urlpath))
        else:
            self._atomic_write_fsspec(fs, checkpoint, urlpath)

    def _atomic_write_local(self, checkpoint: Any, path: str) -> None:
        directory, name = os.path.split(path)
        os.makedirs(directory, exist_ok=True)
        self._clean_stray_temps(directory, os.listdir, lambda n: os.remove(os.path.join(directory, n)))
        tmp = os.path.join(directory, _tmp_name(name))
        try:
            with open(tmp, "wb") as f:
                torch.save(checkpoint, f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            _silently(os.remove, tmp)
            raise
        if hasattr(os, "O_DIRECTORY"):  # POSIX: make the rename itself durable
            try:
                fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
            except PermissionError:
                return  # a platform that cannot open directories (Windows semantics) has no directory fsync
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    def _atomic_write_fsspec(self, fs: Any, checkpoint: Any, path: str) -> None:
        directory, name = posixpath.split(path)
        fs.makedirs(directory, exist_ok=True)
        self._clean_stray_temps(
            directory,
            lambda d: [posixpath.basename(p.rstrip("/")) for p in fs.ls(d, detail=False)],
            lambda n: fs.rm(posixpath.join(directory, n)),
        )
        buffer = io.BytesIO()
        torch.save(checkpoint, buffer)
        tmp = posixpath.join(directory, _tmp_name(name))
        try:
            with fs.open(tmp, "wb") as f:
                f.write(buffer.getvalue())
            fs.mv(tmp, path)
        except BaseException:
            _silently(fs.rm, tmp)
            raise

    def _clean_stray_temps(self, directory: str, listdir: Callable, remove: Callable) -> None:
        """First save into ``directory``: delete temp files left by a crashed process (never by this one)."""
        if directory in self._cleaned_dirs:
            return
        self._cleaned_dirs.add(directory)
        me = str(os.getpid())
        for name in listdir(directory):
            m = _TMP_RE.match(name)
            if m and m.group(1) != me:
                _silently(remove, name)


def _silently(fn: Callable, *args: Any) -> None:
    try:
        fn(*args)
    except OSError:
        pass
