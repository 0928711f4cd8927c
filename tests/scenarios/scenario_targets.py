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
