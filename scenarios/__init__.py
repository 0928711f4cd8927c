"""Race scenarios with their oracles, runnable against any checkpoint IO given as ``module:Class``."""

from racecheck.scenarios.catalogue import (
    CATALOGUE,
    Scenario,
    ScenarioError,
    get,
    instrumented_modules,
    load_target,
)

STOCK_TARGET = "lightning.pytorch.plugins.io.async_plugin:AsyncCheckpointIO"
FIXED_TARGET = "racecheck.fixed_impl:LockedAsyncCheckpointIO"

__all__ = [
    "CATALOGUE",
    "FIXED_TARGET",
    "STOCK_TARGET",
    "Scenario",
    "ScenarioError",
    "get",
    "instrumented_modules",
    "load_target",
]
