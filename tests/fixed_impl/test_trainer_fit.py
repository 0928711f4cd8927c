"""Real ``Trainer.fit`` runs: the checkpoint files on disk must equal ModelCheckpoint's view of them.

Configurations: ``save_top_k`` in {1, 2} x {``every_n_train_steps=1``, ``every_n_epochs=1``}, ``save_last=True``,
monitoring a logged metric that improves every step, so top-k evicts on every save (the path that races).

The plugin wraps the plain ``TorchCheckpointIO`` the strategy plugs in (``LockedAsyncCheckpointIO()``), the path
a user gets. The race windows are not opened with sleeps: under ``racecheck.explore`` on the fake filesystem
every file operation, lock and thread start of the fit is a scheduling point, so the schedules that matter are
chosen, not hoped for. The stock plugin's leak is found and replayed the same way.

Default suite: a few real-disk fits and a short exploration per configuration; ``-m slow`` runs 50 real fits
and 200 explored schedules per configuration.
"""

from __future__ import annotations

import functools
import os

import pytest
import racecheck
import racecheck.fakefs
import torch
from lightning.pytorch import LightningModule, Trainer
from lightning.pytorch.callbacks import ModelCheckpoint
from lightning.pytorch.plugins.io.async_plugin import AsyncCheckpointIO
from racecheck.fixed_impl import LockedAsyncCheckpointIO
from torch.utils.data import DataLoader, TensorDataset

# The fixed IO's behaviour is the subject here, over a Trainer.fit per schedule (~77,000 steps with memory
# watched, 1,400 without): explored with memory=False, the proof over synchronisation and files (memory
# watching's proofs of the IO are in tests/scenarios/test_dpor_reach.py).
explore_without_memory = functools.partial(racecheck.explore, memory=False)

CONFIGS = [
    pytest.param(k, every, id=f"top{k}-{every}") for k in (1, 2) for every in ("every_n_train_steps", "every_n_epochs")
]


class TinyModel(LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(32, 2)

    def training_step(self, batch, batch_idx):
        loss = self.layer(batch[0]).sum()
        # improves every step, so every checkpoint enters the top-k and evicts the oldest one
        self.log("score", -float(self.global_step), on_step=True, on_epoch=False)
        return loss

    def validation_step(self, batch, batch_idx):
        self.log("val", self.layer(batch[0]).sum())

    def val_dataloader(self):
        return self.train_dataloader()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)

    def train_dataloader(self):
        return DataLoader(TensorDataset(torch.ones(8, 32)), batch_size=2)


# every_n_epochs needs more epochs than k for top-k to evict at all
EPOCHS = {"every_n_train_steps": 2, "every_n_epochs": 4}


def _fit(root, io, k, every, max_epochs, ckpt_path=None):
    ckpt = ModelCheckpoint(
        dirpath=os.path.join(root, "ckpts"), monitor="score", mode="min", save_top_k=k, save_last=True,
        **{every: 1},
    )
    trainer = Trainer(
        default_root_dir=root,
        accelerator="cpu",
        max_epochs=max_epochs,
        callbacks=[ckpt],
        plugins=[io],
        logger=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
    )
    trainer.fit(TinyModel(), ckpt_path=ckpt_path)
    return trainer, ckpt


def _disk(root):
    d = os.path.join(root, "ckpts")
    return {os.path.join(d, n) for n in os.listdir(d) if n.endswith(".ckpt")}


def _view(ckpt):
    return {os.path.abspath(p) for p in [*ckpt.best_k_models, ckpt.last_model_path] if p}


def _check_fixed(root, k, every):
    io = LockedAsyncCheckpointIO()  # the strategy plugs in a plain TorchCheckpointIO
    trainer, ckpt = _fit(root, io, k, every, max_epochs=EPOCHS[every])
    assert type(io.checkpoint_io).__name__ == "TorchCheckpointIO"
    assert _disk(root) == _view(ckpt)
    assert len(ckpt.best_k_models) == k
    steps = trainer.global_step
    # Resume from "last" with the same (reusable) plugin object: the file must be complete and loadable.
    trainer, ckpt = _fit(root, io, k, every, max_epochs=EPOCHS[every] + 1, ckpt_path="last")
    assert trainer.global_step == steps + 4
    assert _disk(root) == _view(ckpt)


def _check_stock(k, every):
    root = racecheck.fakefs.root()
    _, ckpt = _fit(root, AsyncCheckpointIO(), k, every, max_epochs=EPOCHS[every])
    leaked = _disk(root) - _view(ckpt)
    assert not leaked, f"leaked checkpoints: {sorted(os.path.basename(p) for p in leaked)}"


@pytest.mark.parametrize(("k", "every"), CONFIGS)
def test_fit_fixed_disk_matches_model_checkpoint(tmp_path, k, every):
    for rep in range(int(os.environ.get("RACECHECK_FIT_REPS", "2"))):
        _check_fixed(str(tmp_path / str(rep)), k, every)


@pytest.mark.slow
@pytest.mark.parametrize(("k", "every"), CONFIGS)
def test_fit_fixed_disk_matches_model_checkpoint_50_fits(tmp_path, k, every):
    for rep in range(50):
        _check_fixed(str(tmp_path / str(rep)), k, every)


def _explore_fixed(k, every, schedules):
    result = explore_without_memory(
        lambda: _check_fixed(racecheck.fakefs.root(), k, every), strategy="pct", schedules=schedules, seed=0,
        fs="posix",
    )
    result.raise_on_failure()
    # the whole budget, unless the space is smaller: then every distinct schedule ran once (skip_duplicates)
    assert result.schedules == schedules or (result.exhausted and result.schedules == result.distinct < schedules)


@pytest.mark.parametrize(("k", "every"), CONFIGS)
def test_fit_fixed_under_racecheck(k, every):
    _explore_fixed(k, every, 5)


@pytest.mark.slow
@pytest.mark.parametrize(("k", "every"), CONFIGS)
def test_fit_fixed_under_racecheck_200_schedules(k, every):
    _explore_fixed(k, every, 200)


@pytest.mark.parametrize(("k", "every"), CONFIGS)
def test_fit_stock_plugin_leaks_checkpoints(k, every):
    """The same fit with Lightning's stock AsyncCheckpointIO, explored: a top-k remove runs before the pending
    write of the same file, so the evicted checkpoint reappears. Found deterministically and replayed from its
    token with the same trace."""

    def fit_stock():
        _check_stock(k, every)

    result = explore_without_memory(fit_stock, strategy="pct", schedules=300, seed=0, fs="posix")
    assert not result.ok, "the stock plugin never leaked a checkpoint"
    assert "leaked checkpoints" in str(result.failure.exception), result.failure
    again = racecheck.replay(fit_stock, result.failure.token, fs="posix")
    assert again.failure is not None and again.failure.trace == result.failure.trace


def test_fit_validate_fit_reuses_the_plugin(tmp_path):
    io = LockedAsyncCheckpointIO()
    trainer, ckpt = _fit(str(tmp_path), io, 1, "every_n_train_steps", max_epochs=1)
    model = TinyModel()
    trainer.validate(model, ckpt_path=ckpt.last_model_path)
    trainer.fit_loop.max_epochs = 2
    trainer.fit(model, ckpt_path="last")
    assert _disk(str(tmp_path)) == _view(trainer.checkpoint_callback)
    assert not [n for n in os.listdir(tmp_path / "ckpts") if n.endswith(".tmp")]
