"""Reference fixes: a locked drop-in replacement for Lightning's AsyncCheckpointIO, and a checkpoint manager over
DCP's async_save (thread- or process-based) whose tracker and retention never lose the checkpoint a resume needs."""

from racecheck.fixed_impl.checkpoint_manager import DurableCheckpointManager
from racecheck.fixed_impl.locked_async import LockedAsyncCheckpointIO, __racecheck_instrument__
from racecheck.fixed_impl.model_checkpoint import LockedModelCheckpoint
from racecheck.fixed_impl.process_manager import ProcessCheckpointManager

__all__ = ["DurableCheckpointManager", "LockedAsyncCheckpointIO", "LockedModelCheckpoint",
           "ProcessCheckpointManager", "__racecheck_instrument__"]
