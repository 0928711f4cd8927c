"""racecheck: make thread races reproducible on demand.

The engine (scheduler, strategies, instrumentation, fake filesystem) knows nothing of Lightning.
Public surface: ``explore``, ``replay``, ``point`` and the failure types.
"""

from racecheck.errors import (
    Crashed,
    Deadlock,
    RacecheckError,
    ReplayDivergence,
    StepLimitExceeded,
    TokenError,
    UncontrolledBlocking,
)
from racecheck.explore import Failure, Result, explore, replay
from racecheck.runtime import point

__all__ = [
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
