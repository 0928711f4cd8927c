"""racecheck: make thread races reproducible on demand.

The engine (scheduler, strategies, instrumentation, fake filesystem) knows nothing of Lightning.
Public surface: ``explore``, ``replay``, ``Config``, ``point`` and the failure types.

``import racecheck`` loads nothing else: each public name is imported the first time it is read (PEP 562), so the
pytest plugin, which imports this package, costs a session without a marked test next to nothing.
"""

import importlib as _importlib

__all__ = [
    "Config",
    "ConfigError",
    "Crashed",
    "Deadlock",
    "Failure",
    "InternalError",
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

_ERRORS = ("ConfigError", "Crashed", "Deadlock", "InternalError", "RacecheckError", "ReplayDivergence",
           "StepLimitExceeded", "TokenError", "UncontrolledBlocking")
# Public name -> the module that defines it, imported on first use.
_LAZY = {
    **dict.fromkeys(("explore", "replay", "Result", "Failure"), "racecheck.api"),
    "Config": "racecheck.config",
    "point": "racecheck.runtime",
    **dict.fromkeys(_ERRORS, "racecheck.errors"),
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'racecheck' has no attribute {name!r}")
    value = getattr(_importlib.import_module(module), name)
    globals()[name] = value  # later reads are plain module attributes
    return value


def __dir__() -> list[str]:
    """The public names, whether imported yet or not, with the module's dunders and loaded subpackages."""
    return sorted(set(__all__) | {name for name in globals() if not name.startswith("_") or name.startswith("__")})
