"""Warm carrier processes for spawn and forkserver children: a schedule's child is forked from an interpreter that
was started once per exploration with the child's modules imported, instead of a new interpreter importing them
every schedule (seconds with torch).

A spawned child's state when its target begins is a function of what it imported: a fresh interpreter, the
parent's ``sys.path``, working folder and main module set up (``multiprocessing.spawn.prepare``), then the modules
that unpickling the process object imports. A template is exactly that state, made once: a fresh interpreter that
ran ``prepare`` and imported those modules (named by the pickle of the first child that needed them), and then
only serves fork requests (the standard library's forkserver loop: ``multiprocessing.forkserver.main``). Each child
is a fork of it and runs the ordinary spawn entry (``spawn._main``), so it unpickles its process object, runs
``prepare`` again (a no-op for what the template did) and its target, as a spawned child would.

Why forks of a template rather than one carrier process reused from schedule to schedule: a process that ran a
target cannot be vouched for (module globals it changed, threads it left, files it holds, C-level state such as
torch's), and a schedule must be the same whether it ran on a fresh or a reused carrier. A template never runs
code under test, so there is nothing to reset: every child starts from the same state, the first schedule's as
the hundredth's (``tests/processes/test_warm.py`` compares traces with fresh interpreters). What differs from a
spawned interpreter: the child's parent pid is the template's, and module-level state made at import (a seeded
``numpy`` or ``torch`` generator, ``PYTHONHASHSEED``) is the template's in every child rather than drawn anew per
child; ``random``'s own generator is reseeded at fork by the interpreter.

A template serves one environment (``os.environ`` at the child's ``start()``: a spawned child inherits it, and
modules read it at import), one ``sys.path``, working folder and main module, one list of modules (for forkserver
children, what ``set_forkserver_preload`` named first, as the stdlib's forkserver imports it): a child that needs
another gets another template, and older ones whose children have all ended are stopped then.

Fork children keep forking the parent: a forked child must see the parent's memory as of ``start()`` (objects the
schedule built just before), which no template made earlier holds.

Templates live for one exploration (``kept``): at its end, pass, fail or KeyboardInterrupt, every child they forked
that is still alive is killed and each template is stopped (killed if it does not leave), so no process outlives
the exploration. ``ENABLED = False`` starts every child in a fresh interpreter, as the standard library does.
"""

from __future__ import annotations

import io
import multiprocessing.connection
import multiprocessing.forkserver as forkserver
import multiprocessing.popen_forkserver as popen_forkserver
import multiprocessing.process
import multiprocessing.resource_tracker as resource_tracker
import multiprocessing.spawn as spawn
import multiprocessing.util as util
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from multiprocessing.context import reduction, set_spawning_popen
from typing import Any

from racecheck import runtime

__racecheck_engine__ = True

ENABLED = True  # False: every spawn or forkserver child starts a fresh interpreter (tests compare the two)
METHODS = ("spawn", "forkserver")
PREPARED = ("sys_path", "dir", "init_main_from_name", "init_main_from_path")  # what shapes the imports
_STOP_S = 5.0  # how long a template is given to leave once told to (real seconds), before it is killed
_POOL: Pool | None = None  # the exploration's templates, while one runs (``kept``)
_real_wait = getattr(multiprocessing.connection.wait, "_racecheck_real", multiprocessing.connection.wait)


def serve(listener_fd: int, alive_r: int, preload: list[str], prepared: dict[str, Any]) -> None:
    """A template's body (in its own fresh interpreter): the spawn setup and the imports, then the fork loop. A
    module that fails to import is left for the child to import (and fail on) as a spawned one would."""
    me = multiprocessing.process.current_process()
    me._inheriting = True  # as in a spawned child: a main module that starts processes at import is refused
    try:
        spawn.prepare(prepared)
    except BaseException:  # noqa: BLE001,S110 - the child prepares again itself, and meets the error there
        pass
    for name in preload:
        try:
            __import__(name)
        except BaseException:  # noqa: BLE001,S110 - the child imports it itself, and meets the error there
            pass
    del me._inheriting
    forkserver.main(listener_fd, alive_r, [])


class Template(forkserver.ForkServer):
    """One warm interpreter with ``preload`` imported, serving forks (``connect_to_new_process``). ``env``: the
    environment it starts with when it is not this process's (a template asked for by a child of the run, for
    its grandchildren: ``grand_warm``); None for this process's own."""

    def __init__(self, preload: list[str], prepared: dict[str, Any], env: dict[str, str] | None = None) -> None:
        super().__init__()
        self._lock = runtime.real_allocate_lock()  # made by a controlled thread: never a stand-in
        self.preload = preload
        self.prepared = prepared
        self.env = env
        self._spawned: subprocess.Popen | None = None

    def ensure_running(self) -> None:
        with self._lock:
            resource_tracker.ensure_running()
            if self._forkserver_pid is not None:
                pid, _ = os.waitpid(self._forkserver_pid, os.WNOHANG)
                if not pid:
                    return
                raise OSError("racecheck: a warm template process died")
            cmd = (f"import sys; sys.path[:0] = {self.prepared['sys_path']!r}; "
                   f"from racecheck.control.processes.warm import serve; "
                   f"serve(%d, %d, {self.preload!r}, {self.prepared!r})")
            with socket.socket(socket.AF_UNIX) as listener:
                address = multiprocessing.connection.arbitrary_address("AF_UNIX")
                listener.bind(address)
                if not util.is_abstract_socket_namespace(address):
                    os.chmod(address, 0o600)
                listener.listen()
                alive_r, alive_w = os.pipe()
                try:
                    exe = spawn.get_executable()
                    args = [exe, *util._args_from_interpreter_flags(), "-c", cmd % (listener.fileno(), alive_r)]
                    if self.env is None:
                        pid = util.spawnv_passfds(exe, args, [listener.fileno(), alive_r])
                    else:  # another process's environment (a child's, for its grandchildren)
                        self._spawned = subprocess.Popen(args, executable=exe, env=self.env, close_fds=True,
                                                         pass_fds=(listener.fileno(), alive_r))
                        pid = self._spawned.pid
                except BaseException:
                    os.close(alive_w)
                    raise
                finally:
                    os.close(alive_r)
            self._forkserver_address = address
            self._forkserver_alive_fd = alive_w
            self._forkserver_pid = pid

    @property
    def address(self) -> Any:
        """Where it takes fork requests (its socket), once running."""
        return self._forkserver_address

    def leave(self) -> None:
        """Tell it to leave (its alive pipe closed); ``stop`` waits for it."""
        if self._forkserver_alive_fd is not None:
            os.close(self._forkserver_alive_fd)
            self._forkserver_alive_fd = None

    def stop(self) -> None:
        """Tell it to leave, wait a while, kill it if it stays."""
        pid = self._forkserver_pid
        if pid is None:
            return
        self._forkserver_pid = None
        self.leave()
        end = time.monotonic() + _STOP_S
        while True:
            done, _ = os.waitpid(pid, os.WNOHANG)
            if done or time.monotonic() >= end:
                break
            time.sleep(0.01)
        if not done:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        if self._spawned is not None:  # reaped here: its Popen is told so (it would reap it again)
            self._spawned.returncode, self._spawned = -1, None
        address = self._forkserver_address
        if address and not util.is_abstract_socket_namespace(address):
            try:
                os.unlink(address)
            except OSError:
                pass


class Pool:
    """The exploration's templates by what they prepared and imported, and every child they forked."""

    def __init__(self) -> None:
        self.templates: dict[tuple, Template] = {}
        self.launched: list[WarmPopen] = []
        self.broken = False  # a template could not be started or reached: fresh interpreters from here on

    def template_for(self, modules: list[str], prep: dict[str, Any], env: dict[str, str] | None = None) -> Template:
        """The template for a child that imports ``modules`` under ``prep`` and the environment as it is now (a
        spawned child inherits it, and modules read it at import: torch, CUDA_VISIBLE_DEVICES), or ``env``, the
        environment of the child of the run that asks for its grandchild. A new one retires the templates whose
        children have all ended (a program that changes its environment every schedule gets a template per
        schedule: no faster than spawn, never stale)."""
        prepared = {key: prep[key] for key in PREPARED if key in prep}
        mine = env is None or env == os.environ
        key = (repr(sorted(prepared.items())), tuple(modules), tuple(sorted((os.environ if mine else env).items())))
        template = self.templates.get(key)
        if template is None:
            for old_key, old in list(self.templates.items()):
                if all(popen.poll() is not None for popen in self.launched if popen.template is old):
                    old.stop()
                    del self.templates[old_key]
            template = self.templates[key] = Template(modules, prepared, None if mine else dict(env))
        return template

    def close(self) -> None:
        for popen in self.launched:  # children still alive (teardown did not come): killed, then reaped
            if popen.returncode is None and popen.pid:
                try:
                    popen.kill()
                    popen.wait(_STOP_S)
                except OSError:
                    pass
        self.launched.clear()
        for template in self.templates.values():  # all told first: their interpreters' ends overlap
            template.leave()
        for template in self.templates.values():
            template.stop()
        self.templates.clear()


class _Recorder(reduction.ForkingPickler):
    """The process object's pickle, noting the module of every function and class in it: what its child imports
    while unpickling it, and so what the template imports once."""

    def __init__(self, file: Any) -> None:
        super().__init__(file)
        self.modules: dict[str, None] = {}

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, type) or callable(obj) and hasattr(obj, "__qualname__"):
            module = getattr(obj, "__module__", None)
            if isinstance(module, str) and module not in ("builtins", "__main__", "__mp_main__"):
                self.modules.setdefault(module, None)
        return NotImplemented


class WarmPopen(popen_forkserver.Popen):
    """``Process._Popen`` for a child of the run started by spawn or forkserver while templates are kept: the
    forkserver's protocol (fds passed over a socket, the pid and the exit status read back on the sentinel) with
    the exploration's template in place of the global forkserver."""

    def _launch(self, process_obj: Any) -> None:
        prep = spawn.get_preparation_data(process_obj.name)
        buf = io.BytesIO()
        set_spawning_popen(self)
        try:
            reduction.dump(prep, buf)
            recorder = _Recorder(buf)
            recorder.dump(process_obj)
        finally:
            set_spawning_popen(None)
        modules = list(recorder.modules)  # in the order the child would import them
        method = getattr(process_obj, "_start_method", None) or multiprocessing.get_start_method(allow_none=True)
        if method == "forkserver":  # what the program asked the forkserver to import first (set_forkserver_preload)
            preload = [name for name in forkserver._forkserver._preload_modules if name != "__main__"]
            modules = [*preload, *(name for name in modules if name not in preload)]
        self.template = self.template_for(modules, prep)
        self.fork_from(self.template, buf)
        self.launched()

    def template_for(self, modules: list[str], prep: dict[str, Any]) -> Any:
        """The exploration's template for this child (``grand_warm`` asks the root for a grandchild's)."""
        if _POOL is None:
            raise RuntimeError("racecheck: a warm child started outside an exploration")
        return _POOL.template_for(modules, prep)

    def launched(self) -> None:
        """The child is running: the exploration's end kills it if it is still there."""
        pool = _POOL
        pool.launched[:] = [popen for popen in pool.launched if popen.returncode is None]
        pool.launched.append(self)

    def fork_from(self, template: Any, buf: io.BytesIO) -> None:
        """The child forked by ``template`` (a ``ForkServer``), handed its pickle; its pid read back."""
        bound, rec = runtime.current_run(), runtime.current_thread_record()
        runtime.bind(None, None)  # the template's start and the request are machinery, not the program's calls
        try:
            self.sentinel, w = template.connect_to_new_process(self._fds)
            parent_w = os.dup(w)  # the parent's sentinel as the child sees it (as the stdlib's forkserver keeps)
            self.finalizer = util.Finalize(self, util.close_fds, (parent_w, self.sentinel))
            with open(w, "wb", closefd=True) as f:
                f.write(buf.getbuffer())
            self.pid = forkserver.read_signed(self.sentinel)
        finally:
            runtime.bind(bound, rec)

    # The exit status comes on the sentinel once the template has reaped the child, a moment after the child's end:
    # read with the real wait, never the exploration's (which would make an external step of that moment).

    def poll(self, flag: int = os.WNOHANG) -> int | None:
        if self.returncode is None:
            if not _real_wait([self.sentinel], 0 if flag == os.WNOHANG else None):
                return None
            try:
                self.returncode = forkserver.read_signed(self.sentinel)
            except (OSError, EOFError):
                self.returncode = 255  # the template is gone (killed at the exploration's end)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int | None:
        if self.returncode is None and timeout is not None and not _real_wait([self.sentinel], timeout):
            return None
        return self.poll(os.WNOHANG if timeout == 0.0 else 0)


def offered() -> Pool | None:
    """The exploration's templates, if children are forked from them now (``grand_warm`` asks for a child)."""
    return _POOL if ENABLED and _POOL is not None and not _POOL.broken else None


def warm_for(process: Any, method: str) -> bool:
    """Whether ``process`` (about to start) is forked from a template: spawn or forkserver, while one is kept."""
    return ENABLED and _POOL is not None and not _POOL.broken and method in METHODS


def start(process: Any, real_start: Any) -> None:
    """``Process.start()`` with a template's fork in place of a new interpreter. A template that cannot be started
    or reached (its interpreter failed to come up) leaves the rest of the exploration to fresh interpreters, this
    child first: slower, never wrong."""
    process._Popen = WarmPopen
    try:
        real_start(process)
    except OSError:
        if _POOL is not None:
            _POOL.broken = True
        del process._Popen
        real_start(process)
    finally:
        process.__dict__.pop("_Popen", None)


@contextmanager
def kept() -> Iterator[None]:
    """Templates for the block (an exploration): made as children need them, every one gone at the end."""
    global _POOL
    saved, _POOL = _POOL, Pool()
    try:
        yield
    finally:
        pool, _POOL = _POOL, saved
        pool.close()
