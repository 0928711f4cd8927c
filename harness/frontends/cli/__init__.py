"""The ``racecheck`` command: list the scenario catalogue, explore it, replay a token, gate a PR, run the demo.

Exit status, for every command: 0 nothing found, 1 a race found (or a gate regression, or a replay that diverged),
2 usage or input error (unknown scenario, malformed token or one of another function, unimportable target or
function, bad baseline file, bad option),
always as exactly one line on stderr and never a traceback. Explorations are delegated to
:mod:`racecheck.frontends.parallel` (so ``--jobs`` and ``--tx`` give the same answer as one process) and reports to
:mod:`racecheck.report`. Scenarios come from :mod:`racecheck.scenarios`, or from the module named by the
``RACECHECK_CATALOGUE`` environment variable (a plug-in catalogue with the same API).

One job per module: ``app`` (the click group and its one-line errors), ``cells`` (catalogue, scenarios, targets and
the text of a cell), ``progress`` (the live display), ``run`` (``list`` and ``run``, and the exploration both ``run``
and ``explore`` end in), ``explore`` (any zero-argument function, with ``options``: every Config field a flag),
``replay``, ``gate`` (with the ``reference`` workload it measures) and ``demo``. ``main`` is the console script's
entry point.
"""

from __future__ import annotations

from racecheck.frontends.cli.app import main

__racecheck_engine__ = True

__all__ = ["main"]
