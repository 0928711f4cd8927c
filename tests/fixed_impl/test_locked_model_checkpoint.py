"""``LockedModelCheckpoint``: the ModelCheckpoint paths that touch files outside the CheckpointIO."""

from __future__ import annotations

import os
import types

import pytest
from lightning.pytorch.callbacks import ModelCheckpoint
from lightning.pytorch.loggers import CSVLogger
from locked_helpers import TIMEOUT, GatedIO, WaitSpy, run_in_thread
from racecheck.fixed_impl import LockedAsyncCheckpointIO, LockedModelCheckpoint, locked_async
from test_locked_async import ck
from test_trainer_fit import SlowTorchCheckpointIO, TinyModel, _disk, _view


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
            plugins=[LockedAsyncCheckpointIO(SlowTorchCheckpointIO())], enable_progress_bar=False,
            enable_model_summary=False,
        )
        trainer.fit(TinyModel(), ckpt_path=ckpt_path)
        assert _disk(tmp_path) == _view(cb)
        last = tmp_path / "ckpts" / "last.ckpt"
        assert os.path.exists(last)
        if save_last == "link":
            assert os.path.islink(last) and os.path.realpath(last) in {os.path.realpath(p) for p in cb.best_k_models}
    assert logger.missing == []
