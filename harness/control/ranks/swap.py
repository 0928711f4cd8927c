"""A rank's start: the model's functions put in place of torch's before a child's code runs (``child``'s
functions, wherever the process bound torch's by name: ``binding``)."""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

from racecheck.control.ranks import binding
from racecheck.control.ranks.child import MODELLED, STATE, SWAPPED

__racecheck_engine__ = True


def held_by_torch() -> Iterator[tuple[Any, Any, Any]]:
    """(module, the model's function, torch's) for each modelled function ``torch.distributed`` or its
    ``distributed_c10d`` still holds in place of the model's."""
    import torch.distributed as dist
    import torch.distributed.distributed_c10d as c10d

    for fn in MODELLED:
        for module in (dist, c10d):
            real = module.__dict__.get(fn.__name__)
            if real is not None and real is not fn:
                yield module, fn, real


def swapped_out() -> dict[int, Any]:
    """torch's functions this process swapped out already, by id."""
    return {key: real for key, (real, _) in SWAPPED.items()}


def reals() -> dict[int, Any]:
    """torch's functions the model replaces, by id: as this process's ``torch.distributed`` holds them, and those
    it swapped out already (a rank starting a child of its own)."""
    found = swapped_out()
    for _module, _fn, real in held_by_torch():
        found[id(real)] = real
    return found


class Install:
    """What a child of the run runs before its code (picklable, for spawn): the model's functions in place of
    torch's, wherever bound. Made in the parent as the child starts, which finds the places then
    (``binding.remember``): a forked child swaps at those; any other walks its own modules. A child whose
    interpreter has not imported ``torch.distributed`` (spawned, or forked from a template) swaps when its code
    imports it (``AfterImport``), not before: importing torch for a child that never uses it cost ~1.3 s a child."""

    def __init__(self) -> None:
        # nothing to find in a parent without torch.distributed, and importing it here would cost every child
        self.mark = binding.remember(reals()) if "torch.distributed" in sys.modules else None

    def __call__(self) -> None:
        thread = threading.get_ident()
        if "torch.distributed" in sys.modules:
            install(None if self.mark is None else binding.remembered(self.mark), thread)
        else:
            sys.meta_path.insert(0, AfterImport("torch.distributed", lambda: install(None, thread)))


class AfterImport(importlib.abc.MetaPathFinder):
    """Runs ``then`` once module ``name`` has been executed by its import, before the import returns: the module
    found as the rest of ``sys.meta_path`` finds it, its loader's ``exec_module`` followed by ``then``."""

    def __init__(self, name: str, then: Callable[[], None]) -> None:
        self.name, self.then = name, then

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)  # once, and not asked again by the search below
        spec = importlib.util.find_spec(fullname)
        loader = None if spec is None else spec.loader
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        real_exec, then = loader.exec_module, self.then

        def exec_module(module: Any) -> None:
            real_exec(module)
            then()

        loader.exec_module = exec_module  # this spec's own loader (one per module found)
        return spec


def install(places: tuple[tuple[str, str], ...] | None, thread: int) -> None:
    """In a child of the run: the model's functions in place of torch's in ``torch.distributed``, its
    ``distributed_c10d`` and ``places`` (every module's binding of one, found here when None); the rank's requests
    come from ``thread``, the child's."""
    # a process that served an earlier run starts this one as no rank; its requests come from this thread only
    STATE.update(rank=None, size=None, backend=None, thread=thread)
    for module, fn, real in held_by_torch():
        SWAPPED[id(real)] = (real, fn)
        setattr(module, fn.__name__, fn)
    if places is None:
        places = binding.places(swapped_out())
    for module_name, key in places:
        namespace = sys.modules[module_name].__dict__
        value = namespace.get(key)
        swap = SWAPPED.get(id(value))
        if swap is not None and swap[0] is value:
            namespace[key] = swap[1]
