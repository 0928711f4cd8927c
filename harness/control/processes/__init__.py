"""Processes join the run: ``multiprocessing`` children started by a controlled thread run under the parent's
scheduler, one step at a time, and their inter-process objects are served by the parent (docs/control.md,
"Processes")."""
