"""Reference fix: a locked drop-in replacement for Lightning's AsyncCheckpointIO."""

from racecheck.fixed_impl.locked_async import LockedAsyncCheckpointIO

__all__ = ["LockedAsyncCheckpointIO"]
