"""Choosing schedules and making sense of them: strategies, coverage, shrinking, the racing pair, divergence,
tokens, the failure database and the schedule loop. Imports the runtime and control layers, nothing above."""
