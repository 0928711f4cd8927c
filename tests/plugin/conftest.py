"""Import torch, Lightning and racecheck's engine before any pytester in-process run.

pytester's in-process runs drop from ``sys.modules`` what was first imported inside them, and torch cannot be
imported a second time in one process (its C extension fails with "SystemError: ... bad call flags"); the engine
and the fake filesystem import them during a run, so they must already be loaded in every worker. The plugin loads
the engine only at the first marked test, which here would be inside a pytester run: load it first too, so every
run shares one engine, as a real session does.
"""

import importlib
import importlib.util

for _name in ("torch", "lightning.pytorch"):
    if importlib.util.find_spec(_name.split(".")[0]) is not None:
        importlib.import_module(_name)

importlib.import_module("racecheck.frontends.pytest_runner")
