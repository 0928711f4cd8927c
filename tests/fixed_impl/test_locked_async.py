"""One test (or a few) per guarantee of ``LockedAsyncCheckpointIO``; each ordering is forced with events.

``GatedIO`` blocks the worker inside a chosen save, ``WaitSpy`` tells the test when a caller thread is blocked
on the plugin's condition; no sleeps are used for synchronisation and no assertion depends on timing.
"""

from __future__ import annotations

import glob
import logging
import os
import traceback

import fsspec
import pytest
import torch
from lightning.fabric.plugins import TorchCheckpointIO
from lightning.pytorch.plugins.io.async_plugin import AsyncCheckpointIO
from locked_helpers import TIMEOUT, GatedIO, WaitSpy, run_in_thread
from racecheck.fixed_impl import LockedAsyncCheckpointIO, locked_async


def ck(v, **extra):
    return {"v": v, "w": torch.full((4,), float(v)), **extra}


def on_disk(d):
    return sorted(os.path.basename(p) for p in glob.glob(os.path.join(d, "*.ckpt")))


def read_v(path):
    return torch.load(path, weights_only=False)["v"]


@pytest.fixture
def inner():
    return GatedIO()


@pytest.fixture
def spy(monkeypatch):
    s = WaitSpy()
    monkeypatch.setattr(locked_async, "threading", s.module)
    return s


# ---------------------------------------------------------------- the upstream bug, stock vs fixed


@pytest.mark.parametrize("impl", ["stock", "fixed", "fixed-cancel"])
@pytest.mark.parametrize("where", ["queued", "writing"])
def test_remove_during_pending_save_stock_leaks_fixed_does_not(tmp_path, inner, impl, where):
    """Forced interleaving of Lightning #14035: save(a) is pending (queued behind b, or blocked in its write),
    remove(a) runs, then the write proceeds. Stock: remove finds nothing, the write creates a -> leaked file.
    Fixed: the removal runs after the write (by default the inner IO sees exactly the synchronous calls), or,
    with ``cancel_superseded``, the queued save is dropped; a is gone, no overlapping calls."""
    if impl == "stock":
        io = AsyncCheckpointIO(inner)
    else:
        io = LockedAsyncCheckpointIO(inner, cancel_superseded=impl == "fixed-cancel")
    a, b = str(tmp_path / "a.ckpt"), str(tmp_path / "b.ckpt")
    gate = inner.gate("b.ckpt" if where == "queued" else "a.ckpt")
    if where == "queued":
        io.save_checkpoint(ck(0), b)
    io.save_checkpoint(ck(1), a)
    gate.wait_entered()
    io.remove_checkpoint(a)
    gate.release()
    io.teardown()
    if impl == "stock":
        assert "a.ckpt" in on_disk(tmp_path), "expected the stock plugin to leak a.ckpt"
        return
    assert "a.ckpt" not in on_disk(tmp_path)
    assert not inner.overlap
    sync_calls = [("save", "b.ckpt", 0)] * (where == "queued") + [("save", "a.ckpt", 1), ("remove", "a.ckpt", None)]
    if impl == "fixed" or where == "writing":
        assert inner.calls == sync_calls  # nothing dropped: what a synchronous IO would have been asked
    else:
        assert inner.calls == [("save", "b.ckpt", 0), ("remove", "a.ckpt", None)]  # cancelled, never written


# ---------------------------------------------------------------- drop-in: the inner IO sees the sync calls


@pytest.mark.parametrize("durability", ["atomic", "fsync", "none"])
def test_inner_io_sees_exactly_the_calls_of_the_synchronous_io(tmp_path, durability):
    """The same call sequence on a plain TorchCheckpointIO used synchronously and wrapped by the fixed IO: the
    same calls (method, checkpoint content, path) reach it, in call order, and the same files result. The one
    difference, with the default ``durability="atomic"``, is that a save's path is the hidden temp name next to
    the target (``.a.ckpt.tmp`` for ``a.ckpt``), renamed into place once durable."""
    from unittest.mock import Mock

    def workload(io, d):
        p = {n: str(d / f"{n}.ckpt") for n in ("a", "b", "last")}
        io.save_checkpoint(ck(1), p["a"])
        io.save_checkpoint(ck(2), p["last"])
        io.save_checkpoint(ck(3), p["b"])
        io.remove_checkpoint(p["a"])
        io.save_checkpoint(ck(4), p["last"])
        io.remove_checkpoint(p["b"])
        io.save_checkpoint(ck(5), p["a"])
        io.teardown()

    def record(inner, d):
        seen = []
        inner.save_checkpoint = Mock(
            side_effect=lambda c, path, storage_options=None: seen.append(("save", os.path.relpath(path, d), c["v"]))
            or TorchCheckpointIO.save_checkpoint(inner, c, path, storage_options)
        )
        inner.remove_checkpoint = Mock(
            side_effect=lambda path: seen.append(("remove", os.path.relpath(path, d)))
            or TorchCheckpointIO.remove_checkpoint(inner, path)
        )
        return seen

    sync_inner, wrapped_inner = TorchCheckpointIO(), TorchCheckpointIO()
    sync_seen, fixed_seen = record(sync_inner, tmp_path / "sync"), record(wrapped_inner, tmp_path / "fixed")
    workload(sync_inner, tmp_path / "sync")
    workload(LockedAsyncCheckpointIO(wrapped_inner, max_pending=1, durability=durability), tmp_path / "fixed")
    if durability == "atomic":
        assert all(c[1].startswith(".") and c[1].endswith(".ckpt.tmp") for c in fixed_seen if c[0] == "save")
        fixed_seen = [(c[0], c[1][1:-4], *c[2:]) if c[0] == "save" else c for c in fixed_seen]
    assert fixed_seen == sync_seen and len(sync_seen) == 7
    assert on_disk(tmp_path / "fixed") == on_disk(tmp_path / "sync") == ["a.ckpt", "last.ckpt"]
    assert read_v(tmp_path / "fixed" / "last.ckpt") == 4


# ---------------------------------------------------------------- 1. remove cancels / waits


def test_1_cancel_superseded_drops_queued_save(tmp_path, inner):
    io = LockedAsyncCheckpointIO(inner, cancel_superseded=True)
    gate = inner.gate("b.ckpt")
    io.save_checkpoint(ck(0), str(tmp_path / "b.ckpt"))
    gate.wait_entered()
    io.save_checkpoint(ck(1), str(tmp_path / "a.ckpt"))  # queued behind b
    io.remove_checkpoint(str(tmp_path / "a.ckpt"))
    gate.release()
    io.wait()
    assert on_disk(tmp_path) == ["b.ckpt"]
    assert [c for c in inner.calls if c[1] == "a.ckpt" and c[0] == "save"] == []
    assert not inner.overlap


def test_1_remove_while_writing_waits_for_write_then_deletes(tmp_path, inner):
    io = LockedAsyncCheckpointIO(inner)
    a = str(tmp_path / "a.ckpt")
    gate = inner.gate("a.ckpt")
    io.save_checkpoint(ck(1), a)
    gate.wait_entered()
    io.remove_checkpoint(a)  # returns at once: the deletion is queued behind the write
    assert inner.calls == [("save", "a.ckpt", 1)]  # the remove has not touched the file being written
    gate.release()
    io.wait()
    assert on_disk(tmp_path) == []
    assert inner.calls == [("save", "a.ckpt", 1), ("remove", "a.ckpt", None)]
    assert not inner.overlap  # on Windows an overlap is the WinError 32 sharing violation


def test_1_remove_of_committed_file_and_of_missing_file(tmp_path, inner):
    io = LockedAsyncCheckpointIO(inner)
    a = str(tmp_path / "a.ckpt")
    io.save_checkpoint(ck(1), a)
    io.wait()
    io.remove_checkpoint(a)
    io.remove_checkpoint(str(tmp_path / "never.ckpt"))
    io.teardown()
    assert on_disk(tmp_path) == []


# ---------------------------------------------------------------- 2. same path: last call wins


@pytest.mark.parametrize("cancel", [False, True])
def test_2_same_path_saves_apply_in_call_order_last_wins(tmp_path, inner, cancel):
    io = LockedAsyncCheckpointIO(inner, max_pending=3, cancel_superseded=cancel)
    last = str(tmp_path / "last.ckpt")
    gate = inner.gate("last.ckpt")
    io.save_checkpoint(ck(1), last)
    gate.wait_entered()
    io.save_checkpoint(ck(2), last)  # queued
    io.save_checkpoint(ck(3), last)  # with cancel_superseded: replaces the queued 2
    gate.release()
    io.wait()
    assert read_v(last) == 3
    written = [1, 3] if cancel else [1, 2, 3]
    assert [c for c in inner.calls if c[0] == "save"] == [("save", "last.ckpt", v) for v in written]


# ---------------------------------------------------------------- 3. deferred deletion


def test_3_eviction_remove_waits_until_new_save_committed(tmp_path, inner):
    io = LockedAsyncCheckpointIO(inner)
    old, new = str(tmp_path / "old.ckpt"), str(tmp_path / "new.ckpt")
    io.save_checkpoint(ck(1), old)
    io.wait()
    gate = inner.gate("new.ckpt")
    io.save_checkpoint(ck(2), new)
    gate.wait_entered()
    io.remove_checkpoint(old)
    # A crash now (new still being written) must leave a complete checkpoint: old is still there.
    assert on_disk(tmp_path) == ["old.ckpt"]
    assert read_v(old) == 1
    gate.release()
    io.wait()
    assert on_disk(tmp_path) == ["new.ckpt"]
    assert inner.calls[-2:] == [("save", "new.ckpt", 2), ("remove", "old.ckpt", None)]


# ---------------------------------------------------------------- 4. load of a pending path


@pytest.mark.parametrize("pending", ["writing", "queued"])
def test_4_load_returns_content_of_pending_save(tmp_path, inner, spy, pending):
    io = LockedAsyncCheckpointIO(inner)
    a = str(tmp_path / "a.ckpt")
    io.save_checkpoint(ck(1), a)
    io.wait()
    gate = inner.gate("a.ckpt" if pending == "writing" else "b.ckpt")
    if pending == "queued":
        io.save_checkpoint(ck(0), str(tmp_path / "b.ckpt"))
    io.save_checkpoint(ck(2), a)
    gate.wait_entered()
    t, out = run_in_thread("loader", io.load_checkpoint, a)
    spy.wait_until_blocked("loader")  # the load really is waiting for the pending save
    gate.release()
    t.join(TIMEOUT)
    assert "error" not in out, out
    assert out["result"]["v"] == 2


# ---------------------------------------------------------------- 5. snapshot on the caller thread


def test_5_in_place_update_after_save_never_reaches_the_file(tmp_path, inner):
    io = LockedAsyncCheckpointIO(inner)
    gate = inner.gate("b.ckpt")
    io.save_checkpoint(ck(0), str(tmp_path / "b.ckpt"))
    gate.wait_entered()
    weight = torch.nn.Parameter(torch.zeros(4))
    io.save_checkpoint({"v": 1, "state": {"w": weight}}, str(tmp_path / "a.ckpt"))  # queued
    with torch.no_grad():
        weight.add_(7)  # the optimizer step after the save call
    gate.release()
    io.wait()
    assert torch.equal(torch.load(tmp_path / "a.ckpt")["state"]["w"], torch.zeros(4))


def test_5_snapshot_is_a_detached_copy_on_cpu_by_default():
    io = LockedAsyncCheckpointIO()
    p = torch.nn.Parameter(torch.ones(3))
    snap = io._snapshot({"a": [p, {"b": p}], "n": 3})
    for t in (snap["a"][0], snap["a"][1]["b"]):
        assert t.device.type == "cpu" and not t.requires_grad and t.data_ptr() != p.data_ptr()
    assert snap["n"] == 3
    assert LockedAsyncCheckpointIO(snapshot_device=None).snapshot_device is None


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_5_snapshot_moves_device_tensors_to_cpu_or_keeps_them():
    t = torch.ones(3, device="cuda")
    assert LockedAsyncCheckpointIO()._snapshot({"t": t})["t"].device.type == "cpu"
    kept = LockedAsyncCheckpointIO(snapshot_device=None)._snapshot({"t": t})["t"]
    assert kept.device.type == "cuda" and kept.data_ptr() != t.data_ptr()


# ---------------------------------------------------------------- 6. bounded memory / backpressure


def test_6_caller_blocks_when_max_pending_snapshots_exist(tmp_path, inner, spy):
    io = LockedAsyncCheckpointIO(inner, max_pending=2)
    snapshots = []
    real_snapshot = io._snapshot
    io._snapshot = lambda c, *rest: snapshots.append(c["v"]) or real_snapshot(c, *rest)
    gate = inner.gate("a.ckpt")
    io.save_checkpoint(ck(1), str(tmp_path / "a.ckpt"))  # being written
    gate.wait_entered()
    io.save_checkpoint(ck(2), str(tmp_path / "b.ckpt"))  # queued: 2 snapshots exist
    t, out = run_in_thread("caller3", io.save_checkpoint, ck(3), str(tmp_path / "c.ckpt"))
    spy.wait_until_blocked("caller3")
    assert snapshots == [1, 2]  # the third caller blocked *before* taking its snapshot
    assert io._slots == 2
    gate.release()
    t.join(TIMEOUT)
    assert out == {"result": None}
    io.wait()
    assert snapshots == [1, 2, 3]
    assert on_disk(tmp_path) == ["a.ckpt", "b.ckpt", "c.ckpt"]


def test_6_max_pending_must_be_positive():
    with pytest.raises(ValueError):
        LockedAsyncCheckpointIO(max_pending=0)


# ---------------------------------------------------------------- 7. atomic writes


class _BlockWhilePickled:
    """Blocks ``torch.save`` on the worker midway through writing the temp file."""

    def __init__(self, gate):
        self.gate = gate

    def __reduce__(self):
        self.gate.entered.set()
        assert self.gate._go.wait(TIMEOUT)
        return (int, (0,))


def test_7_atomic_write_goes_through_the_inner_io_and_temp_is_hidden(tmp_path):
    """durability="atomic": the wrapped IO itself writes the hidden temp; the final name keeps the old complete
    file until the rename."""
    from locked_helpers import Gate

    inner = TorchCheckpointIO()
    io = LockedAsyncCheckpointIO(inner, durability="atomic")
    a = str(tmp_path / "a.ckpt")
    io.save_checkpoint(ck(1), a)
    io.wait()
    gate = Gate()
    io.save_checkpoint(ck(2, blocker=_BlockWhilePickled(gate)), a)
    gate.wait_entered()
    # Mid-write: the final name still holds the old complete file; the partial one is a hidden temp.
    assert read_v(a) == 1
    assert on_disk(tmp_path) == ["a.ckpt"]
    gate.release()
    io.wait()
    assert read_v(a) == 2
    assert os.listdir(tmp_path) == ["a.ckpt"]


def test_7_atomic_mode_hands_the_temp_path_to_the_inner_io(tmp_path, inner):
    io = LockedAsyncCheckpointIO(inner)
    assert io.durability == "atomic"  # the default
    gate = inner.gate("a.ckpt")
    io.save_checkpoint(ck(1), str(tmp_path / "a.ckpt"))
    gate.wait_entered()
    assert os.listdir(tmp_path) == []  # TorchCheckpointIO writes only when the gate opens
    gate.release()
    io.teardown()
    assert inner.paths == [str(tmp_path / ".a.ckpt.tmp")]  # deterministic name: no pid, no counter
    assert os.listdir(tmp_path) == ["a.ckpt"] and read_v(tmp_path / "a.ckpt") == 1


@pytest.mark.parametrize("durability", ["fsync", "atomic"])
def test_7_failed_write_keeps_old_file_and_leaves_no_temp(tmp_path, monkeypatch, durability):
    io = LockedAsyncCheckpointIO(TorchCheckpointIO(), durability=durability)
    a = str(tmp_path / "a.ckpt")
    io.save_checkpoint(ck(1), a)
    io.wait()

    def torn_save(obj, f, *args, **kwargs):
        f.write(b"partial bytes")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(torch, "save", torn_save)
    io.save_checkpoint(ck(2), a)
    with pytest.raises(OSError, match="No space"):
        io.wait()
    monkeypatch.undo()
    assert read_v(a) == 1
    assert os.listdir(tmp_path) == ["a.ckpt"]


@pytest.mark.parametrize("durability", ["fsync", "atomic", "none"])
def test_7_fsyncs_file_and_directory_after_the_inner_write(tmp_path, monkeypatch, durability):
    """The inner IO writes (its call is recorded first), then the plugin fsyncs the file and the directory."""
    events = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: events.append("fsync") or real_fsync(fd))
    inner = TorchCheckpointIO()
    real_save = inner.save_checkpoint
    inner.save_checkpoint = lambda *a, **k: events.append("inner save") or real_save(*a, **k)
    io = LockedAsyncCheckpointIO(inner, durability=durability)
    io.save_checkpoint(ck(1), str(tmp_path / "a.ckpt"))
    io.wait()
    fsyncs = ["fsync"] * (2 if hasattr(os, "O_DIRECTORY") else 1)
    assert events == ["inner save"] + (fsyncs if durability != "none" else [])


def test_7_stray_temps_from_a_crash_are_cleaned_on_first_atomic_save(tmp_path):
    stray = tmp_path / ".epoch=0.ckpt.tmp"
    stray.write_bytes(b"torn")
    unrelated = tmp_path / ".hidden"
    unrelated.write_bytes(b"x")
    assert on_disk(tmp_path) == []  # a stray temp is never mistaken for a checkpoint
    io = LockedAsyncCheckpointIO(TorchCheckpointIO(), durability="atomic")
    io.save_checkpoint(ck(1), str(tmp_path / "a.ckpt"))
    io.teardown()
    assert sorted(os.listdir(tmp_path)) == [".hidden", "a.ckpt"]


def test_7_durability_must_be_known():
    with pytest.raises(ValueError, match="durability"):
        LockedAsyncCheckpointIO(durability="sometimes")


def test_7_fsspec_filesystem_write_is_delegated_unchanged():
    """Non-local fsspec filesystems: the inner IO writes the final path itself; nothing is fsynced or renamed."""
    fs = fsspec.filesystem("memory")
    for durability in ("fsync", "atomic"):
        inner = GatedIO()
        io = LockedAsyncCheckpointIO(inner, durability=durability)
        io.save_checkpoint(ck(5), "memory://g7/a.ckpt")
        io.teardown()
        assert inner.calls == [("save", "a.ckpt", 5)]
        assert fs.ls("/g7", detail=False) == ["/g7/a.ckpt"]
        assert io.load_checkpoint("memory://g7/a.ckpt")["v"] == 5
        fs.rm("/g7", recursive=True)


# ---------------------------------------------------------------- 8. background errors


def test_8_error_surfaces_once_at_next_call_with_original_traceback(tmp_path, inner):
    io = LockedAsyncCheckpointIO(inner)
    boom = RuntimeError("boom")
    inner.fail["bad.ckpt"] = boom
    bad_gate, gate = inner.gate("bad.ckpt"), inner.gate("c.ckpt")
    io.save_checkpoint(ck(1), str(tmp_path / "bad.ckpt"))
    bad_gate.wait_entered()
    io.save_checkpoint(ck(2), str(tmp_path / "c.ckpt"))  # queued before the failure: accepted
    bad_gate.release()
    gate.wait_entered()  # the worker moved past bad: its error is recorded
    with pytest.raises(RuntimeError) as info:
        io.save_checkpoint(ck(3), str(tmp_path / "d.ckpt"))
    assert info.value is boom
    assert "_fail_here" in [f.name for f in traceback.extract_tb(info.value.__traceback__)]
    gate.release()
    io.save_checkpoint(ck(4), str(tmp_path / "e.ckpt"))  # exactly once: no second raise
    io.teardown()
    assert on_disk(tmp_path) == ["c.ckpt", "e.ckpt"]


def test_8_error_surfaces_at_teardown_exactly_once(tmp_path, inner):
    io = LockedAsyncCheckpointIO(inner)
    inner.fail["bad.ckpt"] = RuntimeError("boom")
    io.save_checkpoint(ck(1), str(tmp_path / "bad.ckpt"))
    with pytest.raises(RuntimeError, match="boom"):
        io.teardown()
    io.teardown()


def test_8_remove_deferred_behind_a_failed_save_never_runs(tmp_path, inner):
    io = LockedAsyncCheckpointIO(inner)
    good, bad = str(tmp_path / "good.ckpt"), str(tmp_path / "bad.ckpt")
    io.save_checkpoint(ck(1), good)
    io.wait()
    inner.fail["bad.ckpt"] = OSError(5, "I/O error")
    gate = inner.gate("bad.ckpt")
    io.save_checkpoint(ck(2), bad)
    gate.wait_entered()
    io.remove_checkpoint(good)  # top-k eviction, deferred behind the save that is about to fail
    gate.release()
    with pytest.raises(OSError, match="I/O error"):
        io.teardown()
    assert on_disk(tmp_path) == ["good.ckpt"]
    assert ("remove", "good.ckpt", None) not in inner.calls


def test_8_teardown_never_masks_the_exception_in_flight(tmp_path, inner, caplog):
    io = LockedAsyncCheckpointIO(inner)
    inner.fail["bad.ckpt"] = RuntimeError("background boom")
    io.save_checkpoint(ck(1), str(tmp_path / "bad.ckpt"))
    with caplog.at_level(logging.ERROR, logger=locked_async.__name__):
        with pytest.raises(KeyError, match="training failed") as info:
            try:
                raise KeyError("training failed")
            except KeyError:
                io.teardown()  # as Lightning's _call_and_handle_interrupt does
                raise
    assert "background boom" in caplog.text
    if hasattr(info.value, "add_note"):
        assert any("background boom" in n for n in info.value.__notes__)
    io.teardown()  # reported once (logged), not raised later


# ---------------------------------------------------------------- 9. teardown flushes; reusable


def test_9_teardown_flushes_in_order_and_object_is_reusable(tmp_path, inner):
    io = LockedAsyncCheckpointIO(inner, max_pending=3)
    p = {n: str(tmp_path / f"{n}.ckpt") for n in "abcd"}
    gate = inner.gate("a.ckpt")
    io.save_checkpoint(ck(1), p["a"])
    gate.wait_entered()
    io.save_checkpoint(ck(2), p["b"])
    io.remove_checkpoint(p["a"])
    io.save_checkpoint(ck(3), p["c"])
    gate.release()
    io.teardown()
    assert inner.calls == [("save", "a.ckpt", 1), ("save", "b.ckpt", 2), ("remove", "a.ckpt", None),
                           ("save", "c.ckpt", 3)]
    assert on_disk(tmp_path) == ["b.ckpt", "c.ckpt"]
    assert io._thread is None and not io._ops
    io.save_checkpoint(ck(4), p["d"])  # second "fit"
    io.teardown()
    assert on_disk(tmp_path) == ["b.ckpt", "c.ckpt", "d.ckpt"]


def test_9_wait_and_flush_are_barriers(tmp_path, inner):
    io = LockedAsyncCheckpointIO(inner)
    gate = inner.gate("a.ckpt")
    io.save_checkpoint(ck(1), str(tmp_path / "a.ckpt"))
    gate.wait_entered()
    t, out = run_in_thread("flusher", io.flush)
    gate.release()
    t.join(TIMEOUT)
    assert out == {"result": None}
    assert on_disk(tmp_path) == ["a.ckpt"]


# ---------------------------------------------------------------- 10. filesystems, ranks


def test_10_memory_filesystem_save_load_remove():
    fs = fsspec.filesystem("memory")
    io = LockedAsyncCheckpointIO()
    io.checkpoint_io = TorchCheckpointIO()  # what the strategy does for checkpoint_io=None
    io.save_checkpoint(ck(1), "memory://g10/a.ckpt")
    io.save_checkpoint(ck(2), "memory://g10/b.ckpt")
    io.remove_checkpoint("memory://g10/a.ckpt")
    assert io.load_checkpoint("memory://g10/b.ckpt")["v"] == 2
    io.teardown()
    assert fs.ls("/g10", detail=False) == ["/g10/b.ckpt"]
    fs.rm("/g10", recursive=True)


def test_10_ranks_that_only_load_never_start_a_worker(tmp_path):
    a = str(tmp_path / "a.ckpt")
    torch.save(ck(1), a)
    io = LockedAsyncCheckpointIO(TorchCheckpointIO())
    assert io.load_checkpoint(a)["v"] == 1
    io.teardown()
    assert io._thread is None


def test_10_strategy_plugs_default_io_into_the_wrapper():
    from lightning.pytorch import Trainer

    io = LockedAsyncCheckpointIO()
    trainer = Trainer(plugins=[io], accelerator="cpu", logger=False, enable_progress_bar=False)
    assert trainer.strategy.checkpoint_io is io
    assert type(io.checkpoint_io) is TorchCheckpointIO


# ---------------------------------------------------------------- 5/6. pooled snapshot storage


def test_5_pooled_buffers_are_reused_only_after_their_write_completed(tmp_path):
    from locked_helpers import Gate

    io = LockedAsyncCheckpointIO(TorchCheckpointIO(), max_pending=2)
    a, b, c = (str(tmp_path / f"{n}.ckpt") for n in "abc")
    gate = Gate()
    io.save_checkpoint(ck(1, blocker=_BlockWhilePickled(gate)), a)  # a's snapshot is being written
    gate.wait_entered()
    io.save_checkpoint(ck(2), b)  # must not take a's storage
    assert io._pool == {}
    gate.release()
    io.wait()
    pooled = sum(len(v) for v in io._pool.values())
    assert pooled == 2  # both snapshots' "w" storage is free for reuse now
    io.save_checkpoint(ck(3), c)  # reuses one of them
    io.wait()
    assert [torch.load(p, weights_only=False)["w"][0].item() for p in (a, b, c)] == [1.0, 2.0, 3.0]
    io.teardown()
    assert io._pool == {}  # freed at teardown


def test_5_no_pooling_when_another_checkpoint_io_writes(tmp_path, inner):
    io = LockedAsyncCheckpointIO(inner)
    io.save_checkpoint(ck(1), str(tmp_path / "a.ckpt"))
    io.wait()
    assert io._pool == {}
    io.teardown()
