"""racecheck: make thread races reproducible on demand.

The engine (scheduler, strategies, instrumentation, fake filesystem) knows nothing of Lightning.
Public surface: ``explore``, ``replay``, ``Config``, ``point`` and the failure types.
"""

from racecheck import runtime as _runtime
from racecheck.config import Config
from racecheck.errors import (
    Crashed,
    Deadlock,
    RacecheckError,
    ReplayDivergence,
    StepLimitExceeded,
    TokenError,
    UncontrolledBlocking,
)
from racecheck.runtime import point
from racecheck.search.explore import Failure, Result, explore, replay

# The fake filesystem is an extension like any other; importing it (only when a Config sets fs=) registers it.
_runtime.declare_provider("fs", "racecheck.fakefs")

__all__ = [
    "Config",
    "Crashed",
    "Deadlock",
    "Failure",
    "RacecheckError",
    "ReplayDivergence",
    "Result",
    "StepLimitExceeded",
    "TokenError",
    "UncontrolledBlocking",
    "explore",
    "point",
    "replay",
]
