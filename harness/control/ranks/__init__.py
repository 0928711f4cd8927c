"""Ranks are processes of the run: ``torch.distributed``'s process groups, collectives, point-to-point operations
and stores in the run's child processes, modelled by the parent (``world``, ``stores``) and reached through the
child's own ``torch.distributed`` (``child``)."""

from __future__ import annotations

import sys
from collections.abc import Callable

from racecheck.control.processes.link import PREPARES, registry_of
from racecheck.control.ranks import child, stores, world
from racecheck.runtime import RunContract

__racecheck_engine__ = True


def prepare(run: RunContract) -> Callable[[], None] | None:
    """As a child of ``run`` starts, in the parent: where ``torch.distributed`` is in use, the run's model of the
    ranks (made once per run) and what the child installs before its code runs."""
    if run is None or "torch.distributed" not in sys.modules:
        return None
    models = registry_of(run).models
    if world.MID not in models:
        world.Ranks(run)
        stores.Stores(run)
    return child.install


PREPARES.append(prepare)
