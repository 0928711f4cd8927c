"""A real ``lightning.Trainer.fit`` on a tiny model, with ``ModelCheckpoint`` in the configurations users run.

Why a real fit and not a call sequence: the order and timing of save / remove / last-copy calls come from
Lightning itself (top-k eviction, ``save_last``, epoch-end vs step-end hooks), so the scenario follows whatever
the installed Lightning does. Each configuration monitors a metric that improves every step, so every save
enters the top-k and evicts the oldest one: the path that races.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from racecheck.scenarios.helpers import ckpt_names, quiet, read_checkpoint


@dataclass(frozen=True)
class FitConfig:
    top_k: int
    every: str  # "every_n_train_steps" or "every_n_epochs"

    @property
    def name(self) -> str:
        return f"top{self.top_k}-{'steps' if self.every == 'every_n_train_steps' else 'epochs'}"

    @property
    def epochs(self) -> int:
        # enough saves that top-k evicts: 2 steps an epoch; every_n_epochs saves once an epoch
        return 2 if self.every == "every_n_train_steps" else self.top_k + 1


CONFIGS = [FitConfig(k, every) for k in (1, 2) for every in ("every_n_train_steps", "every_n_epochs")]
STEPS_PER_EPOCH = 2


def _model():
    import torch
    from lightning.pytorch import LightningModule
    from torch.utils.data import DataLoader, TensorDataset

    class TinyModel(LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.layer = torch.nn.Linear(4, 1)

        def training_step(self, batch, batch_idx):
            # improves every step, so every checkpoint enters the top-k and evicts the oldest one
            self.log("score", -float(self.global_step), on_step=True, on_epoch=False)
            return self.layer(batch[0]).sum()

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

        def train_dataloader(self):
            return DataLoader(TensorDataset(torch.arange(2.0 * 4 * STEPS_PER_EPOCH).reshape(-1, 4)), batch_size=2)

    torch.manual_seed(0)
    return TinyModel()


def _dir(ctx, config: FitConfig) -> str:
    return ctx.directory + "/" + config.name


def _fit(ctx, config: FitConfig, max_epochs: int, ckpt_path: str | None = None):
    from lightning.pytorch import Trainer
    from lightning.pytorch.callbacks import ModelCheckpoint

    callback = ModelCheckpoint(dirpath=_dir(ctx, config), monitor="score", mode="min", save_top_k=config.top_k,
                               save_last=True, **{config.every: 1})
    trainer = Trainer(default_root_dir=_dir(ctx, config), accelerator="cpu", devices=1,
                      max_epochs=max_epochs, callbacks=[callback], plugins=[ctx.new_io()], logger=False,
                      enable_progress_bar=False, enable_model_summary=False, num_sanity_val_steps=0,
                      limit_val_batches=0, deterministic=False)
    trainer.fit(_model(), ckpt_path=ckpt_path)
    return trainer, callback


def check_fit(ctx, config: FitConfig) -> None:
    """Trainer.fit, then compare the directory with ModelCheckpoint's view; then resume from "last"."""
    with quiet():
        trainer, callback = _fit(ctx, config, config.epochs)
        view = sorted({os.path.basename(p) for p in [*callback.best_k_models, callback.last_model_path] if p})
        directory = _dir(ctx, config)
        disk = ckpt_names(directory)
        if disk != view:
            leaked, lost = sorted(set(disk) - set(view)), sorted(set(view) - set(disk))
            raise AssertionError(f"[{config.name}] files on disk differ from ModelCheckpoint's view: "
                                 f"leaked {leaked}, lost {lost}")
        for name in disk:
            read_checkpoint(ctx, directory + "/" + name)
        steps = trainer.global_step
        trainer, callback = _fit(ctx, config, config.epochs + 1, ckpt_path="last")
        if trainer.global_step != steps + STEPS_PER_EPOCH:
            raise AssertionError(f"[{config.name}] resume from last ran {trainer.global_step - steps} steps, "
                                 f"expected {STEPS_PER_EPOCH}: last.ckpt was not the latest complete checkpoint")


def trainer_fit(ctx) -> None:
    """A real Trainer.fit (tiny model, ModelCheckpoint monitoring an improving metric, save_last=True) in each
    configuration (save_top_k 1 and 2 x every_n_train_steps=1 and every_n_epochs=1): no exception, the checkpoint
    files on disk equal ModelCheckpoint's view, and resuming from "last" loads a complete checkpoint.

    Reader: target. The Trainer resumes through the target (it is the Trainer's checkpoint IO) and every kept file
    is read with a fresh instance of it; the files on disk are compared with ModelCheckpoint's view by name.
    """
    for config in CONFIGS:
        check_fit(ctx, config)


def _one(config: FitConfig):
    def workload(ctx) -> None:
        check_fit(ctx, config)

    workload.__doc__ = (f"trainer-fit in one configuration (save_top_k={config.top_k}, {config.every}=1, "
                        "save_last=True): no exception, files on disk equal ModelCheckpoint's view, and resuming "
                        "from \"last\" loads a complete checkpoint.\n\n"
                        "Reader: target. The Trainer resumes through the target and every kept file is read with a "
                        "fresh instance of it; names on disk are compared with ModelCheckpoint's view.")
    workload.__qualname__ = workload.__name__ = f"trainer_fit_{config.name.replace('-', '_')}"
    return workload


VARIANTS = {config.name: _one(config) for config in CONFIGS}
