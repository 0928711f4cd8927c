"""Warm grandchildren: a spawn or forkserver process that a child of the run starts is forked from a template of
the exploration (``warm``), as the root's own children are, instead of a fresh interpreter importing torch every
schedule (DCP's checkpoint daemon, which each rank spawns).

Why the root's templates, asked for over the child's pipe, rather than templates of the child's own: a child lives
for one schedule, so templates it made would die with it and be made again next schedule (the cost this saves);
the root lives for the exploration. So the child sends what shapes its grandchild's imports (the modules its
process object's pickle names, the spawn setup that matters, and its own environment, which a spawned grandchild
inherits) in a ``template`` request; the root picks or starts the template for exactly that (``Pool.template_for``:
a child's environment differs from the root's, so it gets a template of its own, started with that environment)
and answers its socket's address. The child then speaks the forkserver's protocol to that socket itself, as the
root does for a child: it hands over its descriptors (the grandchild's pipe to the root among them), writes the
pickle, and reads the pid and the exit status back on the sentinel, so ``join``, ``is_alive`` and ``exitcode`` in
the child work on it as on any forkserver child. The request is no scheduling point (nothing is recorded): a
schedule is the same whether the grandchild was forked from a template or spawned (``tests/processes``'
``test_warmgk_grandchildren.py`` compares the traces).

The same guarantees as for children: a template runs no code under test; its real parent is the template, not the
child (``os.getppid``), as for a forkserver child; the root kills every grandchild by pid at the run's teardown
(``grandchildren``) and stops every template at the exploration's end, pass, fail or interrupt. A template
serving grandchildren is kept until the run that asked for it has ended (``Asked``), then retired like any other.
When the root offers no template (``warm.ENABLED`` False, none could start) or its socket cannot be reached, the
grandchild starts in a fresh interpreter: slower, never wrong.
"""

from __future__ import annotations

import multiprocessing.forkserver as forkserver
import os
from typing import Any

from racecheck import runtime
from racecheck.control.processes import child_run, warm
from racecheck.control.processes.link import uncontrolled

__racecheck_engine__ = True

_ASKED = "grand-warm"  # run.resources key: the templates this run's children asked for, by id
_asking: tuple[Any, Any] | None = None  # in a child, during a start: (its run, the starting thread's record)


# ----- the child's side ---------------------------------------------------------------------------------------------


class Cold(OSError):
    """The root offers no template for this grandchild: it starts in a fresh interpreter."""


class At(forkserver.ForkServer):
    """A template of the root's, as its socket's address: ``connect_to_new_process`` from the child."""

    def __init__(self, address: Any) -> None:
        super().__init__()
        self._forkserver_address = address

    def ensure_running(self) -> None:  # the root's: started (or found running) before it answered
        pass

    def connect_to_new_process(self, fds: list[int]) -> tuple[int, int]:
        # The template's "alive" descriptor is the root's; a fork of it keeps what it is handed here, unused.
        self._forkserver_alive_fd = os.open(os.devnull, os.O_RDONLY)
        try:
            return super().connect_to_new_process(fds)
        finally:
            os.close(self._forkserver_alive_fd)
            self._forkserver_alive_fd = None


class GrandPopen(warm.WarmPopen):
    """``Process._Popen`` for a grandchild: the template is the root's, found by a request over the child's pipe."""

    def template_for(self, modules: list[str], prep: dict[str, Any]) -> Any:
        if _asking is None:
            raise Cold("racecheck: a warm grandchild started outside a start")
        run, rec = _asking
        prepared = {key: prep[key] for key in warm.PREPARED if key in prep}
        before = runtime.current_run(), runtime.current_thread_record()
        runtime.bind(run, rec)  # the request goes through the starting thread's proxy
        try:
            address = run.ask("template", modules, prepared, dict(os.environ))
        finally:
            runtime.bind(*before)
        if address is None:
            raise Cold("racecheck: no template offered")
        return At(address)

    def launched(self) -> None:  # the root kills it by pid at the run's teardown (``grandchildren``)
        pass


def start(run: Any, rec: Any, process: Any, method: str, real_start: Any) -> None:
    """``real_start(process)`` for a grandchild (the calling thread unbound from ``run``, as its start is no step
    of the program's): forked from a root's template for spawn and forkserver, else as asked."""
    global _asking
    if method not in warm.METHODS:
        real_start(process)
        return
    process._Popen = GrandPopen
    _asking = (run, rec)
    try:
        real_start(process)
    except OSError:  # no template (Cold), or it could not be reached: a fresh interpreter, as asked
        del process._Popen
        real_start(process)
    finally:
        _asking = None
        process.__dict__.pop("_Popen", None)


# ----- the root's side ----------------------------------------------------------------------------------------------


class Asked:
    """A template's use by a run's grandchildren, in the exploration's list of what templates launched: alive
    (``returncode`` None) until the run is torn down, so the template is not retired under a run that may fork
    from it again. Its grandchildren are the run's to kill (``grandchildren``): ``pid`` None, nothing to kill."""

    pid = None

    def __init__(self, template: Any) -> None:
        self.template = template
        self.returncode: int | None = None

    def poll(self, flag: int = 0) -> int | None:
        return self.returncode

    def ended(self) -> None:
        self.returncode = 0


def _ended(asked: dict[int, Asked]) -> None:
    for use in asked.values():
        use.ended()


def _on_template(run: Any, message: tuple, at_line: Any) -> Any:
    """In the root, on the proxy of the child's starting thread: the address of the template for the grandchild
    (started now if need be), or None to start it fresh."""
    _, modules, prepared, env = message
    pool = warm.offered()
    if pool is None:
        return None
    with uncontrolled(run):  # the template's start and its socket are machinery, no points
        try:
            template = pool.template_for(list(modules), prepared, env)
            template.ensure_running()
        except OSError:
            pool.broken = True
            return None
    asked = run.resources.get(_ASKED)
    if asked is None:
        asked = run.resources[_ASKED] = {}
        runtime.at_teardown(lambda: _ended(asked))
    if id(template) not in asked:
        asked[id(template)] = use = Asked(template)
        pool.launched.append(use)
    return template.address


child_run.SERVERS["template"] = _on_template
