"""A module no child's target names: imported in a child only when the forkserver was asked to preload it."""
