"""Ranks are processes of the run: ``torch.distributed``'s process groups, collectives, point-to-point operations
and stores in the run's child processes, modelled by the parent (``world``, ``stores``) and reached through the
child's own ``torch.distributed`` (``child``)."""

from __future__ import annotations

from collections.abc import Callable

from racecheck.control.processes.link import PREPARES, registry_of
from racecheck.control.ranks import stores, swap, world
from racecheck.runtime import RunContract

__racecheck_engine__ = True


def prepare(run: RunContract) -> Callable[[], None] | None:
    """As a child of ``run`` starts, in the parent: the run's model of the ranks (made once per run) and what the
    child installs before its code runs: at once where ``torch.distributed`` is imported there, else when the
    child's code imports it (a launcher that never imports torch itself, whose ranks do)."""
    if run is None:
        return None
    models = registry_of(run).models
    if world.MID not in models:
        world.Ranks(run)
        stores.Stores(run)
    return swap.Install()


PREPARES.append(prepare)
