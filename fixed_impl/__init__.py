"""Reference fix: a locked drop-in replacement for Lightning's AsyncCheckpointIO."""
