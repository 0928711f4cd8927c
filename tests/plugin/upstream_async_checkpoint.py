"""Lightning's own check of its ``AsyncCheckpointIO`` through a Trainer, stated once for two suites.

Mirrors ``test_async_checkpoint_plugin`` in Lightning's tests/tests_pytorch/plugins/test_checkpoint_io_plugin.py
(Lightning-AI/pytorch-lightning, Apache License 2.0) for Lightning 2.6.6, the release this project is tested
with; the test reads the same at upstream commit 014994ad91a56a71bbe3d6675f42b6f125789a26. racecheck carried two
verbatim copies (from its commits 9836bd3 and 08d2427) until issue 27: the steps and the assertions are
upstream's, the structure and the words are ours. Upstream retries the test (``flaky(reruns=3)``) because
ModelCheckpoint's top-k eviction can remove a checkpoint while the stock plugin's worker is still committing it.

``check_async_checkpoint_plugin`` is the one definition. Its users:

* tests/plugin/test_upstream_lightning.py copies this file into a pytester directory as
  ``test_checkpoint_io_plugin.py``; ``test_async_checkpoint_plugin`` below then runs it against the stock plugin
  under the racecheck marker, which fails on every run and replays from the printed command.
* tests/fixed_impl/test_upstream_async_plugin.py loads this file and runs the same check against
  ``LockedAsyncCheckpointIO`` under ``racecheck.explore``, where every explored schedule must pass.

The file imports nothing from the project so that the pytester copy stands alone.
"""

from unittest.mock import Mock

import pytest
from lightning.pytorch import Trainer
from lightning.pytorch.callbacks import ModelCheckpoint
from lightning.pytorch.demos.boring_classes import BoringModel
from lightning.pytorch.plugins.io.async_plugin import AsyncCheckpointIO

EPOCHS = 3
TOP_K = 2

#: What the Trainer asks of the async plugin, and what the plugin must pass on to the IO it wraps: with one training
#: batch an epoch and no validation batches, ModelCheckpoint saves once an epoch; keeping the top 2 by step, the
#: third save evicts the first.
EXPECTED_CALLS = {"save_checkpoint": EPOCHS, "remove_checkpoint": EPOCHS - TOP_K}

#: The checkpoints that must be on disk afterwards: the two newest epochs (ModelCheckpoint's default file names).
KEPT_FILES = ["epoch=1-step=2.ckpt", "epoch=2-step=3.ckpt"]


def count_calls(io):
    """Swap ``io``'s save and remove for Mocks that still call the real methods, so their calls can be counted."""
    for method in EXPECTED_CALLS:
        setattr(io, method, Mock(wraps=getattr(io, method)))


def calls_made(io):
    """How often each counted method of ``io`` was called (``io`` went through ``count_calls`` first)."""
    return {method: getattr(io, method).call_count for method in EXPECTED_CALLS}


class CountsTheWrappedIO(BoringModel):
    """A model that, as fit starts, counts the calls reaching the IO inside the async plugin: only then has the
    strategy given the plugin its default ``TorchCheckpointIO``."""

    def on_fit_start(self):
        count_calls(self.trainer.strategy.checkpoint_io.checkpoint_io)


def check_async_checkpoint_plugin(directory, plugin_class):
    """A ``validate`` and then a three-epoch ``fit`` on one Trainer with top-2 checkpointing through a fresh
    ``plugin_class()``: the plugin must get every save and remove the Trainer makes, and hand each one on to the IO
    it wraps.

    ``validate`` first tears the plugin down once before ``fit`` uses it: an async plugin has to serve more than one
    run of the same Trainer. ``directory`` holds the checkpoints and the Trainer's root (a ``tmp_path``, or a
    directory of racecheck's fake filesystem).
    """
    plugin = plugin_class()
    count_calls(plugin)
    checkpointing = ModelCheckpoint(dirpath=directory, save_top_k=TOP_K, monitor="step", mode="max")
    model = CountsTheWrappedIO()
    trainer = Trainer(
        default_root_dir=directory,
        plugins=[plugin],
        callbacks=checkpointing,
        max_epochs=EPOCHS,
        limit_train_batches=1,
        limit_val_batches=0,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.validate(model)
    trainer.fit(model)
    assert calls_made(plugin) == EXPECTED_CALLS
    assert calls_made(trainer.strategy.checkpoint_io.checkpoint_io) == EXPECTED_CALLS


# Upstream's ``flaky(reruns=3)`` becomes racecheck's marker: 500 schedules of the stock plugin's worker thread,
# with every file operation of the run on the fake filesystem, find the eviction racing the commit every time. No
# module is named: racecheck controls the plugin's executor and every file operation wherever they are made.
@pytest.mark.racecheck(schedules=500, fs="posix")
def test_async_checkpoint_plugin(tmp_path):
    """Lightning's stock ``AsyncCheckpointIO`` under the check above (fails: the race upstream retries)."""
    check_async_checkpoint_plugin(tmp_path, AsyncCheckpointIO)
