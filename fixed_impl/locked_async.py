"""A locked, ordered replacement for Lightning's ``AsyncCheckpointIO``.

Lightning's stock plugin submits each save to a ``ThreadPoolExecutor`` and runs ``remove_checkpoint``
directly on the caller thread, with no connection between the two. A remove can therefore run before the
save of the same file has been written (the remove finds nothing, then the write creates the file: a leaked
checkpoint), or while it is being written (``PermissionError`` / WinError 32 on Windows). See Lightning
issue #14035 and ``docs/fixed_impl.md``.

The fix here: every file operation (save, remove) goes through one ordered queue served by one worker thread,
so operations on the filesystem never overlap and apply in call order. The caller thread only snapshots the
checkpoint and edits the queue (defer a remove; optionally cancel a save a later call makes pointless).

Every save and remove reaches the wrapped ``CheckpointIO`` in call order (it gets the calls of the synchronous IO
it wraps, none dropped); durability (write to a hidden temp name, fsync, rename, fsync the directory) is added
around the wrapped IO's own write, never instead of it.

This module holds the queue, its worker and the public API; the durability steps live in
``racecheck.fixed_impl.durability`` and the caller-side copy in ``racecheck.fixed_impl.snapshot``.

Threading primitives are looked up through the module global ``threading`` at call time (never captured at
import), so the racecheck engine controls this module by swapping that name, with no module named; the same holds
for ``os`` here and in the durability module. ``__racecheck_instrument__`` names both modules, an optional hint.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections import deque
from typing import Any, Literal, Optional, Union

import fsspec
import torch
from lightning.fabric.plugins import CheckpointIO
from lightning.pytorch.plugins.io.wrapper import _WrappingCheckpointIO
from racecheck.fixed_impl.durability import (
    DURABILITY,
    IN_FLIGHT,
    clean_stray_temps,
    fsync_dir,
    fsync_tree,
    local_path,
    silently,
    tmp_name,
)
from racecheck.fixed_impl.snapshot import keeps_no_references, snapshot, storage_key
from typing_extensions import override

log = logging.getLogger(__name__)

#: Modules whose ``threading`` / ``os`` names racecheck must control to explore this IO (every module of this
#: package that touches either at call time): an optional hint, since racecheck controls every module by default;
#: the scenario layer reads it, and ``instrument=`` accepts it.
__racecheck_instrument__ = ("racecheck.fixed_impl.locked_async", "racecheck.fixed_impl.durability")

_QUEUED, _RUNNING, _DONE, _CANCELLED = "queued", "running", "done", "cancelled"



def path_key(path: Any) -> str:
    """The one spelling of a checkpoint path that the queue is searched by: ``os.path.abspath`` of a local path, a
    URL as given. ``a.ckpt`` and ``/cwd/a.ckpt`` get the same key; ``failed_saves()`` returns keys."""
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
        self.key = path_key(path)
        self.checkpoint = checkpoint
        self.storage_options = storage_options
        self.state = _QUEUED
        self.buffers: list[torch.Tensor] = []  # pooled snapshot storage, returned to the pool when done

    def __repr__(self) -> str:
        return f"_Op({self.kind} {self.path} {self.state})"


class LockedAsyncCheckpointIO(_WrappingCheckpointIO):
    """Asynchronous checkpoint saving with the ordering guarantees Lightning's ``AsyncCheckpointIO`` lacks.

    Drop-in: ``Trainer(plugins=[LockedAsyncCheckpointIO()])``. Like the stock plugin it wraps another
    ``CheckpointIO`` (``None`` lets the strategy plug in ``TorchCheckpointIO``) and every ``save_checkpoint`` /
    ``remove_checkpoint`` call reaches it, in call order, on one background worker: the wrapped IO sees the
    calls a synchronous run would make (none dropped), only later and never two at once. By default a save's
    path is the hidden temp file that is then renamed into place (``durability="fsync"``: the caller's path).

    Guarantees:

    1. ``remove_checkpoint(p)`` is applied after every save queued before it (including one of ``p`` that is
       queued or being written): a removed path is never left on disk by a late write, and a remove never
       touches a file that has an open write handle. With ``cancel_superseded=True`` a still-queued save of
       ``p`` is dropped instead of being written and then removed.
    2. Saves to the same path apply in call order: the last call wins. (With ``cancel_superseded=True`` a
       queued save superseded by a newer save of the same path is dropped; the newer snapshot takes its slot.)
    3. A remove issued after saves of other paths takes effect only after those saves have committed
       (deferred deletion), and "committed" includes durability (7): top-k eviction ``save(new); remove(old)``
       never leaves zero complete checkpoints, even across a power loss.
    4. ``load_checkpoint(p)`` with a pending save (or remove) of ``p`` waits for it and returns what was
       saved.
    5. The checkpoint is snapshotted on the caller thread: tensors are detached and copied (to CPU by default,
       ``snapshot_device=None`` keeps their device), so later in-place updates never reach the file and
       accelerator memory does not grow per queued save. Containers are rebuilt; other leaves are shared.
    6. At most ``max_pending`` snapshots exist at once (queued or being written); ``save_checkpoint`` blocks
       (backpressure) before snapshotting until a slot is free.
    7. Durability, around the wrapped IO's own write (local paths; see ``durability``): ``"atomic"`` (default)
       has the wrapped IO write a hidden temp file ``.<name>.tmp`` next to the target, fsyncs it, renames it
       over the final name and fsyncs the directory, so a crash at any point leaves the old or the new
       complete file; ``"fsync"`` hands the wrapped IO the caller's path unchanged and fsyncs the written file
       and its directory after it returned, before the save counts as committed; ``"none"`` adds nothing (the
       stock plugin's behaviour).
    8. A background error is raised at the next call (save, remove, load, ``wait``) or at ``teardown()``,
       exactly once, with its original traceback. Removes that were queued behind a failed save are dropped,
       so a failure never deletes a good checkpoint. ``teardown()`` called while another exception is
       propagating (Lightning tears down in ``except``) logs the background error instead of masking it.
       ``failed_saves()`` names the paths whose save failed (or was refused because of an earlier failure).
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
        reuse_buffers: reuse the storage of written snapshots for the next ones when the wrapped IO is a plain
            ``TorchCheckpointIO`` (which serialises and keeps no reference): copying into memory that is
            already mapped skips the page faults of a fresh allocation, which the caller would otherwise wait
            for on every save. Up to ``max_pending`` snapshots' worth is kept between saves and freed at
            ``teardown()``. Never used with another ``CheckpointIO`` (or a wrapped/mocked
            ``save_checkpoint``), since it could keep references to the tensors.
        durability: ``"atomic"`` (default), ``"fsync"`` or ``"none"``, see guarantee 7. Applies to paths on
            the local filesystem (``LocalFileSystem``); other fsspec filesystems get the wrapped IO's own
            semantics and the caller's path. ``"atomic"`` gives the wrapped IO the temp path next to the
            target; use ``"fsync"`` for a wrapped IO that must see the final path (it uploads or indexes by
            name), at the price of crash atomicity of its own write.
        cancel_superseded: drop a queued save that a later call makes pointless (a remove or a newer save of
            the same path). Off by default, so the wrapped IO sees every call.

    """

    __racecheck_instrument__ = __racecheck_instrument__

    def __init__(
        self,
        checkpoint_io: Optional[CheckpointIO] = None,
        max_pending: int = 2,
        snapshot_device: Optional[Union[str, torch.device]] = "cpu",
        reuse_buffers: bool = True,
        durability: Literal["atomic", "fsync", "none"] = "atomic",
        cancel_superseded: bool = False,
    ) -> None:
        super().__init__(checkpoint_io)
        if max_pending < 1:
            raise ValueError(f"max_pending must be >= 1, got {max_pending}")
        if durability not in DURABILITY:
            raise ValueError(f"durability must be one of {', '.join(DURABILITY)}; got {durability!r}")
        self.max_pending = max_pending
        self.snapshot_device = torch.device(snapshot_device) if snapshot_device is not None else None
        self.reuse_buffers = reuse_buffers
        self.durability = durability
        self.cancel_superseded = cancel_superseded
        self._pool: dict[tuple, list[torch.Tensor]] = {}  # (dtype, device, numel) -> free flat buffers
        # Created here, looked up through the module global at call time (instrumentable).
        self._cond = threading.Condition()
        self._ops: deque[_Op] = deque()
        self._slots = 0  # save ops in the queue (queued or being written): the snapshots that exist
        self._thread: Optional[threading.Thread] = None
        self._error: Optional[BaseException] = None
        self._failed: dict[str, BaseException] = {}  # path key -> error of its latest save, until one commits
        self._cleaned_dirs: set[str] = set()

    # ------------------------------------------------------------------ public API

    @override
    def save_checkpoint(
        self, checkpoint: dict[str, Any], path: Any, storage_options: Optional[Any] = None
    ) -> None:
        """Snapshot ``checkpoint`` now and queue its write to ``path``; returns before the write.

        Blocks first while ``max_pending`` snapshots exist, so memory stays bounded (guarantee 6).
        """
        key = path_key(path)
        poolable = self._poolable(storage_options)
        with self._cond:
            self._raise_pending_error(refused=key)
            while self._slots >= self.max_pending:
                self._cond.wait()
                self._raise_pending_error(refused=key)
            # The copy is made with the lock held: a save is then one critical section (every acquisition is a
            # point where the worker can come first, and a proof covers every order of them), and the worker
            # waits for the lock only to move to its next operation, never while it writes.
            op = _Op("save", path, None, storage_options)
            try:
                op.checkpoint = self._snapshot(checkpoint, op.buffers if poolable else None)
            except BaseException:
                self._release(op)
                raise
            if self.cancel_superseded:
                # A still-queued save of the same path is superseded. The new snapshot takes the old slot, so
                # removes deferred behind the old save still wait for a complete file at this path.
                for queued in self._ops:
                    if queued.kind == "save" and queued.key == op.key and queued.state == _QUEUED:
                        self._release(queued)
                        queued.checkpoint, queued.storage_options = op.checkpoint, storage_options
                        queued.buffers = op.buffers
                        self._cond.notify_all()
                        return
            self._slots += 1
            self._enqueue(op)

    @override
    def remove_checkpoint(self, path: Any) -> None:
        """Queue the deletion of ``path`` behind everything queued before (guarantees 1, 3).

        Returns at once; the file is gone once the operations ahead of it (including a save of ``path``) have
        been applied. Call ``wait()`` to observe that. With ``cancel_superseded`` a queued save of ``path`` is
        dropped first.
        """
        key = path_key(path)
        with self._cond:
            self._raise_pending_error()
            if self.cancel_superseded:
                for queued in [o for o in self._ops if o.key == key and o.kind == "save" and o.state == _QUEUED]:
                    self._ops.remove(queued)
                    queued.state = _CANCELLED
                    self._release(queued)
                    self._slots -= 1
                self._cond.notify_all()
            # Still queued (not run inline) even when idle: one thread touches the filesystem, and an existing
            # committed file at ``path`` must go only after the saves queued before this call (guarantee 3).
            self._enqueue(_Op("remove", path))

    def failed_saves(self) -> frozenset[str]:
        """Absolute paths (``os.path.abspath``; URLs as given) whose latest save failed in the background or was
        refused because an earlier one had failed; a later successful save of a path takes it off the list.
        ``LockedModelCheckpoint`` uses it so that ``best_model_path`` never names a file that was not
        written."""
        with self._cond:
            return frozenset(self._failed)

    @override
    def load_checkpoint(self, path: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """Load ``path`` once every queued operation on it has been applied (guarantee 4)."""
        key = path_key(path)
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
        key = path_key(path)
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
        """The caller-side copy of ``checkpoint`` on ``snapshot_device``; with ``buffers``, into recycled pooled storage
        (see ``racecheck.fixed_impl.snapshot.snapshot``). Called with the lock held, so the pool is read directly."""

        def take_free(key: tuple) -> Optional[torch.Tensor]:
            free = self._pool.get(key)
            return free.pop() if free else None

        return snapshot(checkpoint, self.snapshot_device, buffers, take_free)

    def _poolable(self, storage_options: Any) -> bool:
        """Whether snapshot storage may be recycled after the write: only when the wrapped IO is known to keep no
        reference to the tensors."""
        return self.reuse_buffers and storage_options is None and keeps_no_references(self.checkpoint_io)

    def _release(self, op: _Op) -> None:
        """Drop ``op``'s snapshot; its pooled storage becomes reusable (called with the lock held)."""
        op.checkpoint = None
        if self.reuse_buffers:
            for flat in op.buffers:
                self._pool.setdefault(storage_key(flat), []).append(flat)
        op.buffers = []

    def _raise_pending_error(self, refused: Optional[str] = None) -> None:
        """Raise a recorded background error once (called with the lock held). ``refused``: the key of the save
        this call would have queued; it is recorded as failed, since it will never be written."""
        error, self._error = self._error, None
        if error is not None:
            if refused is not None:
                self._failed[refused] = error
            raise error  # ``raise`` keeps the worker's traceback frames and adds the caller's

    def _enqueue(self, op: _Op) -> None:
        """Append ``op`` and make sure a worker runs (called with the lock held). The worker is started here, with
        the lock held, on purpose: its first act is to take the lock, so it waits until the caller is out of
        ``save_checkpoint`` instead of competing with it for the interpreter through its first write (+0.3 ms per
        save of a 1 MB checkpoint when it was handed its operation and started at once: ``bench_fixed_io.py``)."""
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

        The head stays in the queue while it runs, so ``load``/``wait``/``teardown`` see it as pending. Finishing
        one operation and taking the next are one critical section: every acquisition of the lock is a point where
        the caller can interleave, and a proof covers every order of them, so the worker takes it once per
        operation (and once to start).
        """
        op: Optional[_Op] = None
        error: Optional[BaseException] = None
        while True:
            with self._cond:
                if op is not None:
                    self._finish(op, error)
                if not self._ops:
                    self._thread = None
                    self._cond.notify_all()
                    return
                op = self._ops[0]
                op.state = _RUNNING
            error = None
            try:
                self._apply(op)
            except BaseException as ex:  # recorded and re-raised on the caller thread
                error = ex

    def _finish(self, op: _Op, error: Optional[BaseException]) -> None:
        """Take the applied head off the queue and record how it went (called with the lock held)."""
        self._ops.popleft()
        op.state = _DONE
        self._release(op)
        if op.kind == "save":
            self._slots -= 1
            if error is None:
                self._failed.pop(op.key, None)
            else:
                self._failed[op.key] = error
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
        """Hand ``op`` to the wrapped IO, with the durability step around its write (guarantee 7)."""
        inner = self.checkpoint_io
        assert inner is not None
        if op.kind == "remove":
            inner.remove_checkpoint(op.path)
            return
        local = local_path(op.path) if self.durability != "none" else None
        if local is None:
            inner.save_checkpoint(op.checkpoint, op.path, storage_options=op.storage_options)
        elif self.durability == "fsync":
            inner.save_checkpoint(op.checkpoint, op.path, storage_options=op.storage_options)
            fsync_tree(local)
            fsync_dir(os.path.dirname(local))
        else:
            self._atomic_save(inner, op, local)

    def _atomic_save(self, inner: CheckpointIO, op: _Op, path: str) -> None:
        """The wrapped IO writes a hidden temp file next to ``path``; fsync it, rename it over ``path``, fsync the
        directory. The order is what makes it crash-safe: a rename that became durable before the data would
        leave an empty or torn file under the final name (``tests/fixed_impl/test_durability.py``)."""
        directory, name = os.path.split(path)
        clean_stray_temps(directory, self._cleaned_dirs)
        tmp = os.path.join(directory, tmp_name(name))
        IN_FLIGHT.add(tmp)
        try:
            inner.save_checkpoint(op.checkpoint, tmp, storage_options=op.storage_options)
            self._commit(tmp, path)
        except BaseException:
            silently(os.remove, tmp)
            raise
        finally:
            IN_FLIGHT.discard(tmp)

    def _commit(self, tmp: str, path: str) -> None:
        """Make the temp file durable, then give it its final name, then make the name durable."""
        fsync_tree(tmp)
        os.replace(tmp, path)
        fsync_dir(os.path.dirname(path))
