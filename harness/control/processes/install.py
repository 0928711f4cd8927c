"""Putting processes under control for an exploration: ``Process``'s lifetime calls and ``multiprocessing``'s
object factories, patched for its duration and deciding at call time.

A controlled caller gets a child of the run (``children``) and served objects (``models.FACTORIES``); any other
caller, and the stdlib's own pools and queues making their workers and locks (``children.from_machinery``), get
the real ones, as before. The factories are patched where code reaches them: ``BaseContext``'s methods (so
``get_context("spawn").Queue()``), the ``multiprocessing`` module's names (bound methods of the default context),
and, through control by default, every module global that holds one of those bound methods
(``from multiprocessing import Queue``, ``torch.multiprocessing.Queue``).
"""

from __future__ import annotations

import concurrent.futures
import concurrent.futures.process
import functools
import multiprocessing
import multiprocessing.connection
import multiprocessing.context
import multiprocessing.managers
import multiprocessing.process
import multiprocessing.shared_memory
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from racecheck import runtime
from racecheck.control import instrument
from racecheck.control.processes import (
    child_pools,  # noqa: F401 - registers a child's pools' collector with ``pools``
    children,
    grandchildren,
    managers,
    pools,
    segments,
    spawned,
    waits,
    warm,
)
from racecheck.control.processes.link import PREPARES
from racecheck.control.processes.models import FACTORIES
from racecheck.control.ranks import prepare as _ranks_prepared  # noqa: F401 - children of a run may be ranks

__racecheck_engine__ = True

_Base = multiprocessing.process.BaseProcess
RealProcessPoolExecutor = concurrent.futures.process.ProcessPoolExecutor
_Context = multiprocessing.context.BaseContext


def _controlled(depth: int) -> Any:
    """The caller's run if it is a controlled thread of a live run and not the stdlib's machinery, else None."""
    run = runtime.current_run()
    if run is None or runtime.current_thread_record() is None or run.aborting or children.from_machinery(depth + 1):
        return None
    return None if getattr(run, "in_child", False) else run  # a child's own: ``_in_child``


def _in_child(depth: int) -> Any:
    """In a child of a run: its run if the caller is a thread of that run and not the stdlib's machinery (its
    processes and objects are then the root's: ``grandchildren``), else None."""
    run = runtime.current_run()
    if run is None or not getattr(run, "in_child", False) or not run.mine() or children.from_machinery(depth + 1):
        return None
    return run


# What a controlled caller gets for each factory of ``multiprocessing`` (and of every context).
SERVED: dict[str, Callable[..., Any]] = {**FACTORIES, "Pool": pools.Pool, "Manager": managers.manager}


def _factory_method(name: str, real: Callable[..., Any]) -> Callable[..., Any]:
    model = SERVED[name]
    own_context = name == "Pool"  # a pool starts its workers with the context it was asked of

    @functools.wraps(real)
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        run = _controlled(1)
        if run is None:
            kid = _in_child(1) if name in grandchildren.MADE_BY_ROOT or own_context else None
            if kid is not None and own_context:  # a child's Pool: workers of the run (``child_pools``)
                return model(kid, *args, context=self, **kwargs)
            return real(self, *args, **kwargs) if kid is None else grandchildren.make(kid, name, args, kwargs)
        return model(run, *args, context=self, **kwargs) if own_context else model(run, *args, **kwargs)

    method._racecheck_real = real  # type: ignore[attr-defined]
    return method


def _module_factory(name: str, real: Callable[..., Any]) -> Callable[..., Any]:
    model = SERVED[name]

    @functools.wraps(real)
    def factory(*args: Any, **kwargs: Any) -> Any:
        run = _controlled(1)
        if run is None:
            kid = _in_child(1) if name in grandchildren.MADE_BY_ROOT or name == "Pool" else None
            if kid is not None and name == "Pool":  # a child's Pool: workers of the run (``child_pools``)
                return model(kid, *args, **kwargs)
            return real(*args, **kwargs) if kid is None else grandchildren.make(kid, name, args, kwargs)
        return model(run, *args, **kwargs)

    factory._racecheck_real = real  # type: ignore[attr-defined]
    return factory


# The module's own names, wrapped once at import: the same object in every exploration, so the identity swaps
# registered below always name it.
MODULE_FACTORIES = {name: _module_factory(name, getattr(multiprocessing, name)) for name in SERVED}
for _name, _factory in MODULE_FACTORIES.items():
    instrument.register_swap(getattr(multiprocessing, _name), _factory)


def _start(real: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(real)
    def start(self: Any) -> None:
        if children.CHILD in self.__dict__ or grandchildren.MARK in self.__dict__:
            return real(self)
        if _controlled(1) is not None:
            return children.start(self, real)
        kid = _in_child(1)
        return real(self) if kid is None else grandchildren.start(kid, self, real)

    start._racecheck_real = real  # type: ignore[attr-defined]
    return start


def _join(real: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(real)
    def join(self: Any, timeout: float | None = None) -> None:
        child = children.child_of(self)
        if child is None:
            mark = grandchildren.mark_of(self)
            return real(self, timeout) if mark is None else grandchildren.lifetime(mark, self, "join", real, timeout)
        return children.join(child, timeout)

    join._racecheck_real = real  # type: ignore[attr-defined]
    return join


def _is_alive(real: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(real)
    def is_alive(self: Any) -> bool:
        child = children.child_of(self)
        if child is None:
            mark = grandchildren.mark_of(self)
            return real(self) if mark is None else grandchildren.lifetime(mark, self, "is_alive", real)
        return children.is_alive(child)

    is_alive._racecheck_real = real  # type: ignore[attr-defined]
    return is_alive


def _stopper(verb: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def wrap(real: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(real)
        def stop(self: Any) -> None:
            child = children.child_of(self)
            if child is None:
                mark = grandchildren.mark_of(self)
                return real(self) if mark is None else grandchildren.lifetime(mark, self, verb, real)
            return children.stop(child, verb, real)

        stop._racecheck_real = real  # type: ignore[attr-defined]
        return stop

    return wrap


def _exitcode(real: property) -> property:
    def read(self: Any) -> Any:
        child = children.child_of(self)
        if child is None:
            mark = grandchildren.mark_of(self)
            return real.fget(self) if mark is None else grandchildren.lifetime(mark, self, "exitcode", real.fget)
        return children.exitcode(child, real.fget)

    return property(read, doc=real.__doc__)


def _wait(real: Callable[..., Any]) -> Callable[..., Any]:
    """``multiprocessing.connection.wait`` on the sentinels of processes of the run and served Pipe ends (torch's
    ``spawn`` joins its ranks so), by a thread of the run in the root or in a child: a point that waits for the
    first of them (``waits``). Anything else is the real wait."""

    @functools.wraps(real)
    def wait(object_list: Any, timeout: float | None = None) -> Any:
        objects = list(object_list)
        run = _controlled(1)
        if run is not None:
            ready = waits.wait_in_root(run, objects, timeout)
        else:
            kid = _in_child(1)
            ready = None if kid is None else waits.wait_in_child(kid, objects, timeout)
        return real(objects, timeout) if ready is None else ready

    wait._racecheck_real = real  # type: ignore[attr-defined]
    return wait


_REAL_WAIT = multiprocessing.connection.wait
# One wrapper for the exploration's life, so that a module global holding the real wait (``from
# multiprocessing.connection import wait``) is swapped for it as the factories are.
WAIT = _wait(_REAL_WAIT)
instrument.register_swap(_REAL_WAIT, WAIT)


def _wait_patch(real: Callable[..., Any]) -> Callable[..., Any]:
    return WAIT if real is _REAL_WAIT else _wait(real)


instrument.register_swap(segments.RealSharedMemory, segments.shared_memory)

# (owner, attribute, wrapper)
PATCHES: list[tuple[Any, str, Callable[[Any], Any]]] = [
    (_Base, "start", _start),
    (_Base, "join", _join),
    (_Base, "is_alive", _is_alive),
    (_Base, "terminate", _stopper("terminate")),
    (_Base, "kill", _stopper("kill")),
    (_Base, "exitcode", _exitcode),
    (multiprocessing.connection, "wait", _wait_patch),
    (multiprocessing.managers.BaseManager, "start", managers.started_for_real),
    *[(_Context, name, functools.partial(_factory_method, name)) for name in SERVED],
]


def patch_child() -> None:
    """In a spawned child of a run, before its code: the lifetime calls and the factories patched for the child's
    life (its interpreter ends with it), as a forked child inherits them, so the processes and objects the child
    makes are the run's (``grandchildren``). A forked child has them already."""
    if hasattr(_Base.start, "_racecheck_real"):
        return
    for owner, name, wrap in PATCHES:
        setattr(owner, name, wrap(owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)))
    for name, factory in MODULE_FACTORIES.items():
        setattr(multiprocessing, name, factory)
    for module in (concurrent.futures, concurrent.futures.process):  # its executors' workers: ``child_pools``
        module.ProcessPoolExecutor = process_pool_executor


def _prepare(run: Any) -> Any:
    return None if run is None else patch_child


PREPARES.append(_prepare)


def process_pool_executor(*args: Any, **kwargs: Any) -> Any:
    """``ProcessPoolExecutor(...)``: workers of the run for a controlled caller, else the real executor."""
    run = _controlled(1) or _in_child(1)  # a child's executor: workers of the run too (``child_pools``)
    if run is None:
        return RealProcessPoolExecutor(*args, **kwargs)
    return pools.ProcessPoolExecutor(run, *args, **kwargs)


instrument.register_swap(RealProcessPoolExecutor, process_pool_executor)


@contextmanager
def joining(options: Any = None) -> Iterator[None]:
    """Patch the lifetime calls and the factories for the block (over what ``external.waiting_outside`` put there:
    a process that is not a child of the run is still started and waited on as before); restore them after.
    ``options``: the exploration's (control, extension) options, which a spawned child installs (``spawned``)."""
    saved: list[tuple[Any, str, Any]] = []
    before, spawned.OPTIONS = spawned.OPTIONS, spawned.portable(options)
    try:
        for owner, name, wrap in PATCHES:
            current = owner.__dict__.get(name) if isinstance(owner, type) else getattr(owner, name)
            inherited = current is None
            real = getattr(owner, name) if inherited else current
            saved.append((owner, name, None if inherited else current))
            setattr(owner, name, wrap(real))
        for name, factory in MODULE_FACTORIES.items():
            saved.append((multiprocessing, name, getattr(multiprocessing, name)))
            setattr(multiprocessing, name, factory)
        saved.append((multiprocessing.shared_memory, "SharedMemory", segments.RealSharedMemory))
        multiprocessing.shared_memory.SharedMemory = segments.shared_memory
        for module in (concurrent.futures, concurrent.futures.process):
            saved.append((module, "ProcessPoolExecutor", module.__dict__.get("ProcessPoolExecutor")))
            module.ProcessPoolExecutor = process_pool_executor
        with warm.kept():  # spawn and forkserver children forked from templates, gone with the exploration
            yield
    finally:
        spawned.OPTIONS = before
        for owner, name, own in reversed(saved):
            if own is None:
                delattr(owner, name)
            else:
                setattr(owner, name, own)
