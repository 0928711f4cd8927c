"""Targets for the scenario API tests: factories, a declared instrumentation list, and things that are not IOs."""

from __future__ import annotations

from racecheck.fixed_impl import LockedAsyncCheckpointIO

__racecheck_instrument__ = ["json"]


def locked_factory():
    """A zero-argument factory, as a user would write to configure the IO."""
    return LockedAsyncCheckpointIO(max_pending=1)


def stock_factory():
    from lightning.pytorch.plugins.io import AsyncCheckpointIO

    return AsyncCheckpointIO()


def not_an_io_factory():
    return 42


def failing_factory():
    raise RuntimeError("no storage configured\nsecond line")


class NotAnIO:
    def save_checkpoint(self, checkpoint, path, storage_options=None):
        pass


NOT_CALLABLE = 3


def locked_fsync():
    """The fixed IO fsyncing after the wrapped IO's own write (not crash-safe with a temp-file-and-move writer)."""
    return LockedAsyncCheckpointIO(durability="fsync")


class DuckTypedIO:
    """Every CheckpointIO method, but not a CheckpointIO subclass: the call-sequence scenarios can use it, a
    Trainer refuses it outright (a configuration error, the same under every schedule)."""

    def __init__(self):
        from lightning.fabric.plugins import TorchCheckpointIO

        self.inner = TorchCheckpointIO()

    def save_checkpoint(self, checkpoint, path, storage_options=None):
        self.inner.save_checkpoint(checkpoint, path, storage_options)

    def load_checkpoint(self, path, map_location=None):
        return self.inner.load_checkpoint(path)

    def remove_checkpoint(self, path):
        self.inner.remove_checkpoint(path)

    def teardown(self):
        pass
