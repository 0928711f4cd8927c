"""The scenario catalogue: every known async-checkpointing race as a workload plus an oracle, run against any
checkpoint IO given as ``module:attr``, on the fake filesystem (posix or windows semantics) or the real disk.

Public API (the CLI, pytest plugin, reports and gate build on exactly this):
``CATALOGUE``, ``get``, ``Scenario``, ``Target``, ``Prepared``, ``load_target``, ``run``, ``ScenarioError``,
``STOCK_TARGET``, ``FIXED_TARGET``; ``READERS`` says how oracles read checkpoints (``Scenario.reader``);
``KINDS`` what a scenario drives (``Scenario.takes``: a CheckpointIO, or a checkpoint manager such as
``MANAGER_TARGET``, see ``manager_contract.CheckpointManager``).
"""

from __future__ import annotations

from typing import Any

from racecheck.scenarios.catalogue import CATALOGUE
from racecheck.scenarios.core import (
    KINDS,
    READERS,
    SEMANTICS,
    Context,
    Prepared,
    Scenario,
    ScenarioError,
    Target,
    load_target,
)

STOCK_TARGET = "lightning.pytorch.plugins.io.async_plugin:AsyncCheckpointIO"
FIXED_TARGET = "racecheck.fixed_impl:LockedAsyncCheckpointIO"
LEGACY_TARGET = "racecheck.scenarios.legacy:Lightning18AsyncCheckpointIO"
DCP_TARGET = "racecheck.scenarios.dcp:DcpAsyncCheckpointIO"
DCP_WAITING_TARGET = "racecheck.scenarios.dcp:WaitingDcpAsyncCheckpointIO"
# checkpoint managers (scenarios with takes="manager"): the fixed one, and the naive ones of the 2026 reports
MANAGER_TARGET = "racecheck.fixed_impl:DurableCheckpointManager"
NAIVE_MANAGER_TARGETS = tuple(f"racecheck.scenarios.naive_managers:{name}" for name in (
    "MegatronStyleManager", "MegatronScanManager", "SkyRLStyleManager", "KempnerStyleManager"))
# the same over DCP's process-based async_save (the manager-ranks-process cell runs only these)
PROCESS_MANAGER_TARGET = "racecheck.fixed_impl:ProcessCheckpointManager"
NAIVE_PROCESS_MANAGER_TARGETS = tuple(f"racecheck.scenarios.process_managers:{name}" for name in (
    "ProcessKempnerManager", "ProcessBackToBackManager"))


def get(name: str) -> Scenario:
    """The scenario called ``name``; ScenarioError (one line, naming the known ones) otherwise."""
    try:
        return CATALOGUE[name]
    except (KeyError, TypeError):
        raise ScenarioError(f"unknown scenario {name!r} (known: {', '.join(CATALOGUE)})") from None


def run(name: str, target: str = STOCK_TARGET, fs: str = "posix", extra_instrument: Any = (), **explore_kwargs: Any):
    """Explore scenario ``name`` against ``target`` on ``fs``; keyword arguments go to ``racecheck.explore``."""
    import racecheck

    prepared = get(name).build(load_target(target, extra_instrument), fs)
    return racecheck.explore(prepared.fn, **{**prepared.explore_kwargs, **explore_kwargs})


__all__ = [
    "CATALOGUE",
    "DCP_TARGET",
    "DCP_WAITING_TARGET",
    "FIXED_TARGET",
    "KINDS",
    "LEGACY_TARGET",
    "MANAGER_TARGET",
    "NAIVE_MANAGER_TARGETS",
    "NAIVE_PROCESS_MANAGER_TARGETS",
    "PROCESS_MANAGER_TARGET",
    "READERS",
    "SEMANTICS",
    "STOCK_TARGET",
    "Context",
    "Prepared",
    "Scenario",
    "ScenarioError",
    "Target",
    "get",
    "load_target",
    "run",
]
