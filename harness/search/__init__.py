"""Choosing schedules and making sense of them: the strategies (one module each, named by ``registry``), replaying
a record, coverage, shrinking, the racing pair, divergence, tokens, the failure database, the session that runs
schedules, the schedule loop, and ``exploration``, which runs one exploration or replay end to end. Imports the
runtime, sync and control layers (and errors), nothing above: the Config it runs with comes from ``racecheck.api``."""
