"""Reference fix: a locked drop-in replacement for Lightning's AsyncCheckpointIO."""

from racecheck.fixed_impl.locked_async import LockedAsyncCheckpointIO, __racecheck_instrument__
from racecheck.fixed_impl.model_checkpoint import LockedModelCheckpoint

__all__ = ["LockedAsyncCheckpointIO", "LockedModelCheckpoint", "__racecheck_instrument__"]
