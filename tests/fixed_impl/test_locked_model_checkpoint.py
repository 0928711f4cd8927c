"""``LockedModelCheckpoint``: the ModelCheckpoint paths that touch files outside the CheckpointIO."""

from __future__ import annotations

import functools
import os
import types

import pytest
import racecheck
from lightning.pytorch.callbacks import ModelCheckpoint
from lightning.pytorch.loggers import CSVLogger
from locked_helpers import TIMEOUT, GatedIO, WaitSpy, run_in_thread
from racecheck.fixed_impl import LockedAsyncCheckpointIO, LockedModelCheckpoint, locked_async
from test_locked_async import ck
from test_trainer_fit import TinyModel, _disk, _view

# The fixed IO's behaviour is the subject here, over a Trainer.fit per schedule: explored with memory=False, the
# proof over synchronisation and files (memory watching's proofs of the IO are in
# tests/scenarios/test_dpor_reach.py).
explore_without_memory = functools.partial(racecheck.explore, memory=False)


@pytest.fixture
def spy(monkeypatch):
    s = WaitSpy()
    monkeypatch.setattr(locked_async, "threading", s.module)
    return s


def stub_trainer(io):
    strategy = types.SimpleNamespace(
        checkpoint_io=io, barrier=lambda *a: None, reduce_boolean_decision=lambda d, all=True: d
    )
    return types.SimpleNamespace(strategy=strategy, is_global_zero=True)


@pytest.mark.parametrize("callback", [ModelCheckpoint, LockedModelCheckpoint])
def test_link_to_pending_checkpoint(tmp_path, spy, callback):
    """save_last="link" links last.ckpt to a checkpoint whose write is pending. Stock: a dangling link (a crash
    now leaves no resumable "last"). Fixed: the link is made only after the write committed."""
    inner = GatedIO()
    io = LockedAsyncCheckpointIO(inner)
    best, last = str(tmp_path / "best.ckpt"), str(tmp_path / "last.ckpt")
    gate = inner.gate("best.ckpt")
    io.save_checkpoint(ck(1), best)
    gate.wait_entered()
    t, out = run_in_thread("linker", callback._link_checkpoint, stub_trainer(io), best, last)
    if callback is ModelCheckpoint:
        t.join(TIMEOUT)
        assert os.path.islink(last) and not os.path.exists(last)  # dangling
        gate.release()
    else:
        spy.wait_until_blocked("linker")
        assert not os.path.lexists(last)
        gate.release()
        t.join(TIMEOUT)
    io.teardown()
    assert out == {"result": None}
    assert os.path.exists(last)


def test_file_exists_answers_with_the_queue_state(tmp_path):
    inner = GatedIO()
    io = LockedAsyncCheckpointIO(inner, max_pending=3)
    trainer = stub_trainer(io)
    cb = LockedModelCheckpoint(dirpath=tmp_path)
    done, a, b = (str(tmp_path / f"{n}.ckpt") for n in ("done", "a", "b"))
    io.save_checkpoint(ck(0), done)
    io.wait()
    gate = inner.gate("x.ckpt")
    io.save_checkpoint(ck(0), str(tmp_path / "x.ckpt"))
    gate.wait_entered()
    io.save_checkpoint(ck(1), a)  # pending save: not on disk yet, but will be
    io.remove_checkpoint(done)  # pending remove: on disk, but will not be
    assert cb.file_exists(a, trainer) and not os.path.exists(a)
    assert not cb.file_exists(done, trainer) and os.path.exists(done)
    assert not cb.file_exists(b, trainer)
    gate.release()
    io.teardown()
    assert ModelCheckpoint.file_exists(cb, a, trainer) is True


class _CheckingLogger(CSVLogger):
    """A logger that reads the checkpoint in ``after_save_checkpoint`` (as upload-on-save loggers do)."""

    missing: list

    def after_save_checkpoint(self, checkpoint_callback):
        path = checkpoint_callback._last_checkpoint_saved
        if not os.path.exists(path):
            self.missing.append(path)


@pytest.mark.parametrize("save_last", [True, "link"])
def test_fit_with_locked_model_checkpoint(tmp_path, save_last):
    from lightning.pytorch import Trainer

    logger = _CheckingLogger(tmp_path / "logs")
    logger.missing = []
    for max_epochs, ckpt_path in ((2, None), (3, "last")):
        cb = LockedModelCheckpoint(
            dirpath=tmp_path / "ckpts", monitor="score", mode="min", save_top_k=2, save_last=save_last,
            every_n_train_steps=1,
        )
        trainer = Trainer(
            default_root_dir=tmp_path, accelerator="cpu", max_epochs=max_epochs, callbacks=[cb], logger=logger,
            plugins=[LockedAsyncCheckpointIO()], enable_progress_bar=False,
            enable_model_summary=False,
        )
        trainer.fit(TinyModel(), ckpt_path=ckpt_path)
        assert _disk(str(tmp_path)) == _view(cb)
        last = tmp_path / "ckpts" / "last.ckpt"
        assert os.path.exists(last)
        if save_last == "link":
            assert os.path.islink(last) and os.path.realpath(last) in {os.path.realpath(p) for p in cb.best_k_models}
    assert logger.missing == []


# ---------------------------------------------------------------- best_model_path vs a save that fails later


def _fit_with_failing_saves(callback_cls):
    """One schedule: top-2 fit on the fake fs, where the filesystem fails a chosen write or fsync with EIO."""
    import racecheck.fakefs
    import torch
    from lightning.pytorch import Trainer

    root = racecheck.fakefs.root()
    io = LockedAsyncCheckpointIO()
    cb = callback_cls(dirpath=os.path.join(root, "ckpts"), monitor="score", mode="min", save_top_k=2,
                      every_n_train_steps=1)
    trainer = Trainer(default_root_dir=root, accelerator="cpu", max_epochs=2, callbacks=[cb], plugins=[io],
                      logger=False, enable_progress_bar=False, enable_model_summary=False, num_sanity_val_steps=0)
    error = None
    try:
        trainer.fit(TinyModel())
    except OSError as ex:
        error = ex
    failed = io.failed_saves()
    if failed:
        assert error is not None and error.errno == 5, "a checkpoint save failed but no error surfaced"
    best = cb.best_model_path
    assert best not in failed, f"best_model_path names {os.path.basename(best)}, whose save failed"
    if best:
        assert torch.load(best, weights_only=False)["global_step"] >= 0
    assert not {p for p in cb.best_k_models if p in failed}
    return bool(failed)


@pytest.mark.parametrize("callback", [ModelCheckpoint, LockedModelCheckpoint])
def test_best_model_path_never_names_a_failed_save(callback):
    """Explored with EIO injected by the fake filesystem on a write or fsync chosen by the schedule (so the failure
    lands in a queued save, in its durability step, or nowhere). Stock ModelCheckpoint reports the failed file as
    best; LockedModelCheckpoint never does, and the error still stops the fit."""
    from racecheck.fakefs import FakeFS

    seen = []

    def body():
        seen.append(_fit_with_failing_saves(callback))

    result = explore_without_memory(body, strategy="random", schedules=24, seed=1, fs=FakeFS(eio=("write", "fsync")))
    if callback is ModelCheckpoint:
        assert not result.ok and "whose save failed" in str(result.failure.exception)
    else:
        result.raise_on_failure()
        assert any(seen) and not all(seen)  # some schedules failed a save, some did not


def test_failed_save_is_reconciled_in_state_dict(tmp_path):
    """A unit view of the same: a queued save fails; the callback state that goes into the next checkpoint no
    longer names it, and best falls back to the best committed file."""
    inner = GatedIO()
    io = LockedAsyncCheckpointIO(inner)
    cb = LockedModelCheckpoint(dirpath=tmp_path, monitor="score", mode="min", save_top_k=2)
    cb._io = io
    good, bad = str(tmp_path / "good.ckpt"), str(tmp_path / "bad.ckpt")
    io.save_checkpoint(ck(1), good)
    io.wait()
    import torch

    cb.best_k_models = {good: torch.tensor(1.0), bad: torch.tensor(0.5)}
    cb.best_model_path, cb.best_model_score = bad, torch.tensor(0.5)
    inner.fail["bad.ckpt"] = OSError(5, "I/O error")
    io.save_checkpoint(ck(2), bad)
    with pytest.raises(OSError, match="I/O error"):
        io.wait()  # the error surfaces
    assert cb.best_model_path == good
    assert cb.state_dict()["best_model_path"] == good and list(cb.best_k_models) == [good]
    assert cb.best_model_score == 1.0 and cb.kth_best_model_path == ""
    io.teardown()
