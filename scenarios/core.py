"""The scenario API: a Scenario is a workload plus an oracle; a Target is the checkpoint IO it runs against.

Why a separate module: the CLI, pytest plugin, reports and gate all build on exactly this surface
(``Scenario``, ``Target``, ``Prepared``, ``load_target``), while the catalogue of scenarios grows behind it.
Lightning is imported lazily here (only when an IO is built), so listing the catalogue stays cheap.
"""

from __future__ import annotations

import importlib
import inspect
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from racecheck.scenarios.helpers import quiet

SEMANTICS = ("posix", "windows", "real")

_IO_METHODS = ("save_checkpoint", "load_checkpoint", "remove_checkpoint", "teardown")
# What a checkpoint manager target has (racecheck.scenarios.manager_contract.CheckpointManager).
_MANAGER_METHODS = ("save", "finalize", "resume", "close")

#: What a scenario runs against (``Scenario.takes``) and a target is (``Target.kind``).
KINDS = {"io": "a CheckpointIO", "manager": "a checkpoint manager"}

# How an oracle reads what a schedule left, named by the "Reader:" paragraph of its workload's docstring.
READERS = {
    "target": "checkpoints read back with a fresh instance of the target (its load_checkpoint); names on the "
              "filesystem",
    "names": "names on the filesystem only (no checkpoint is read)",
}


class ScenarioError(Exception):
    """Unknown scenario, unusable target or unsupported filesystem; the message is one line meant for the user."""


# ----- targets ------------------------------------------------------------------------------------------------------


def _is_io_class(cls: type) -> bool:
    return all(callable(getattr(cls, name, None)) for name in _IO_METHODS)


def _is_manager_class(cls: type) -> bool:
    return all(callable(getattr(cls, name, None)) for name in _MANAGER_METHODS) and isinstance(
        getattr(cls, "tracker_file", None), str)


def _class_modules(cls: type) -> list[str]:
    """Modules of every non-stdlib class in the MRO: a subclass of the stock plugin needs the stock module too."""
    names = []
    for klass in inspect.getmro(cls):
        mod = getattr(klass, "__module__", "") or ""
        top = mod.split(".")[0]
        if mod and top not in sys.stdlib_module_names and top not in ("builtins", "typing_extensions"):
            names.append(mod)
    return names


def _unique(items: Iterable[str]) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for item in items:
        seen.setdefault(item, None)
    return tuple(seen)


@dataclass(frozen=True)
class Target:
    """A checkpoint IO given as ``module:attr``: a class, or a zero-argument factory returning an IO.

    ``instrument`` names the modules racecheck instruments explicitly (it controls every module by default, these
    included): the target's module, the modules of the IO class and its bases, anything the target module lists in
    ``__racecheck_instrument__``, and the caller's extras. Their loggers are quieted during a schedule.
    """

    spec: str
    factory: Callable[..., Any] = field(repr=False)
    io_class: type = field(repr=False)
    instrument: tuple[str, ...] = ()
    kind: str = "io"  # "manager": a checkpoint manager class, built per schedule by ``new_manager``

    def new_manager(self, directory: str, keep_last_n: int = 1) -> Any:
        """A fresh checkpoint manager writing under ``directory`` (the contract's constructor)."""
        return self.factory(directory, keep_last_n=keep_last_n)

    def new_io(self, inner: Any = None) -> Any:
        """A fresh IO. A wrapping IO built without an inner IO gets ``inner`` (default Lightning's
        TorchCheckpointIO), the way a Trainer's strategy plugs it in."""
        io = self.factory()
        if inner is not None or _wants_inner(io):
            if not _wants_inner(io):
                raise ScenarioError(f"target {self.spec} already has an inner checkpoint IO; this scenario needs "
                                    "to choose it (give a class, or a factory returning an unwrapped IO)")
            if inner is None:
                from lightning.fabric.plugins import TorchCheckpointIO

                inner = TorchCheckpointIO()
            io.checkpoint_io = inner
        return io


def _wants_inner(io: Any) -> bool:
    try:
        from lightning.pytorch.plugins.io.wrapper import _WrappingCheckpointIO
    except ImportError:  # pragma: no cover - lightning is a dependency of the scenarios
        return False
    return isinstance(io, _WrappingCheckpointIO) and io.checkpoint_io is None


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0]}" if text else type(exc).__name__


def load_target(spec: str, extra_instrument: Iterable[str] = ()) -> Target:
    """Import ``module:attr`` (a CheckpointIO class or a zero-argument factory) with a one-line ScenarioError."""
    if not isinstance(spec, str) or spec.count(":") != 1 or not all(spec.partition(":")[::2]):
        raise ScenarioError(f"target {spec!r} must look like 'package.module:ClassName'")
    module_name, _, attr = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # noqa: BLE001 - reported to the user as one line
        raise ScenarioError(f"cannot import target module {module_name!r}: {_one_line(exc)}") from None
    obj: Any = module
    for part in attr.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            raise ScenarioError(f"module {module_name!r} has no attribute {attr!r}")
    kind = "io"
    if inspect.isclass(obj) and not _is_io_class(obj) and _is_manager_class(obj):
        io_class, factory, kind = obj, obj, "manager"
    elif inspect.isclass(obj):
        if not _is_io_class(obj):
            raise ScenarioError(f"target {spec!r} is not a CheckpointIO (needs {', '.join(_IO_METHODS)}) nor a "
                                f"checkpoint manager (needs {', '.join(_MANAGER_METHODS)} and tracker_file)")
        io_class, factory = obj, obj
    elif callable(obj):
        try:
            sample = obj()
        except Exception as exc:  # noqa: BLE001 - reported to the user as one line
            raise ScenarioError(f"target factory {spec!r} failed: {_one_line(exc)}") from None
        if not _is_io_class(type(sample)):
            raise ScenarioError(f"target factory {spec!r} returned {type(sample).__name__}, not a CheckpointIO")
        io_class, factory = type(sample), obj
        _silently_teardown(sample)
    else:
        raise ScenarioError(f"target {spec!r} is neither a CheckpointIO class nor a factory")
    declared: list[str] = []
    for mod in _unique([module_name, getattr(obj, "__module__", module_name), io_class.__module__]):
        declared.extend(getattr(sys.modules.get(mod), "__racecheck_instrument__", ()) or ())
    names = _unique([module_name, getattr(obj, "__module__", None) or module_name, *_class_modules(io_class),
                     *declared, *extra_instrument])
    for name in names:
        try:
            importlib.import_module(name)
        except Exception as exc:  # noqa: BLE001 - reported to the user as one line
            raise ScenarioError(f"cannot instrument {name!r}: {_one_line(exc)}") from None
    return Target(spec=spec, factory=factory, io_class=io_class, instrument=names, kind=kind)


def _silently_teardown(io: Any) -> None:
    try:
        io.teardown()
    except Exception:  # noqa: BLE001 - a sample built only to check the type; it did no work
        pass


# ----- scenarios ----------------------------------------------------------------------------------------------------


def _forget_fsspec_instances() -> None:
    """fsspec caches filesystem instances per OS thread ident, and idents are reused by later threads: an instance
    left mid-transaction by an earlier schedule (a crash or teardown unwound its thread) would be handed to a thread
    of this one. Every schedule starts with no cached LocalFileSystem, so it depends on its token alone."""
    try:
        from fsspec.implementations.local import LocalFileSystem
    except ImportError:  # pragma: no cover - fsspec is a dependency
        return
    LocalFileSystem.clear_instance_cache()


class Context:
    """What a workload sees in one schedule: where to write, how to build the IO, and state for the recovery.

    ``directory`` is ``<fake root>/ckpts`` on the fake filesystem and a fresh real temporary directory under
    "real"; ``state`` is reset at the start of every schedule (a crash recovery reads what the workload reached).
    """

    def __init__(self, scenario: Scenario, target: Target, fs: str) -> None:
        self.scenario, self.target, self.fs = scenario, target, fs
        self.directory = ""
        self.state: dict[str, Any] = {}
        self._real_dir: str | None = None

    def begin(self) -> None:
        self.state = {}
        _forget_fsspec_instances()
        if self.fs == "real":
            self._real_dir = tempfile.mkdtemp(prefix="racecheck-")
            self.directory = os.path.join(self._real_dir, "ckpts")
        else:
            from racecheck import fakefs

            self.directory = fakefs.root() + "/ckpts"

    def end(self) -> None:
        if self._real_dir is not None:
            shutil.rmtree(self._real_dir, ignore_errors=True)
            self._real_dir = None

    def path(self, name: str) -> str:
        return os.path.join(self.directory, name) if self.fs == "real" else f"{self.directory}/{name}"

    def new_io(self, inner: Any = None) -> Any:
        return self.target.new_io(inner)

    def new_manager(self, keep_last_n: int = 1) -> Any:
        return self.target.new_manager(self.directory, keep_last_n)


@dataclass(frozen=True)
class Prepared:
    """A scenario bound to a target and a filesystem: pass ``explore_kwargs`` to ``racecheck.explore``/``replay``."""

    scenario: Scenario
    target: Target
    fs: str
    fn: Callable[[], None]
    explore_kwargs: dict[str, Any]


@dataclass(frozen=True)
class Scenario:
    """A workload run against a checkpoint IO, and the oracle it must satisfy (``oracle``: one sentence).

    ``semantics``: the filesystems it runs under; ``default_semantics``: what ``--fs both`` means for it;
    ``small``: dfs exhausts it at preemption bound 2. ``crash``: the fake filesystem draws a power loss and
    ``recovery`` (the oracle) runs afterwards. ``why`` explains a missing semantics. ``reader``: how the oracle
    reads what the schedule left (a key of ``READERS``).
    """

    name: str
    oracle: str
    workload: Callable[[Context], None] = field(repr=False)
    semantics: tuple[str, ...] = SEMANTICS
    default_semantics: tuple[str, ...] = ("posix", "windows")
    small: bool = True
    recovery: Callable[[Context], None] | None = field(default=None, repr=False)
    fault_window: int = 64
    max_steps: int = 200_000
    watchdog: float | None = 2.0
    # plain memory accesses as scheduling points (explore's ``memory``); a caller's own ``memory=`` wins
    memory: bool = True
    why: str = ""
    extra: Any = field(default=None, repr=False, compare=False)  # scenario data, e.g. a generated workload
    reader: str = "target"
    takes: str = "io"  # a key of KINDS: what kind of target the workload drives
    # a manager scenario for one saver only ("process": managers declaring ``async_checkpointer = "process"``)
    saver: str | None = None

    def accepts(self, target: Target) -> bool:
        """Whether this scenario runs against ``target`` (a CheckpointIO scenario never takes a manager)."""
        return target.kind == self.takes and (self.saver is None or saver_of(target) == self.saver)

    @property
    def crash(self) -> bool:
        return self.recovery is not None

    def fs_spec(self, fs: str) -> Any:
        """What ``explore(fs=...)`` gets: a semantics name, a crashing FakeFS, or None for the real disk."""
        if fs == "real":
            return None
        if self.crash:
            from racecheck.fakefs import FakeFS

            return FakeFS(semantics=fs, crash=True, fault_window=self.fault_window)
        return fs

    def build(self, target: Target, fs: str = "posix") -> Prepared:
        if fs not in self.semantics:
            reason = f" ({self.why})" if self.why else ""
            raise ScenarioError(f"scenario {self.name!r} does not run under {fs!r}; it runs under "
                                f"{', '.join(self.semantics)}{reason}")
        if target.kind == self.takes and not self.accepts(target):
            raise ScenarioError(f"scenario {self.name!r} runs a manager whose saver is {self.saver!r} (a class "
                                f"declaring async_checkpointer = {self.saver!r}); target {target.spec}'s is "
                                f"{saver_of(target)!r}")
        if not self.accepts(target):
            raise ScenarioError(f"scenario {self.name!r} runs {KINDS[self.takes]}; target {target.spec} is "
                                f"{KINDS[target.kind]}")
        ctx = Context(self, target, fs)
        workload = self.workload

        def scenario() -> None:
            ctx.begin()
            try:
                with quiet(target.instrument):
                    workload(ctx)
            finally:
                ctx.end()

        module = workload.__module__
        scenario.__module__ = module
        scenario.__qualname__ = scenario.__name__ = f"{self.name}[{target.spec}]"
        kwargs: dict[str, Any] = {
            "instrument": list(_unique([module, "racecheck.scenarios.helpers", *target.instrument])),
            "fs": self.fs_spec(fs),
            "on_crash": None,
            "max_steps": self.max_steps,
            "watchdog": self.watchdog,
            "memory": self.memory,
        }
        if self.crash:
            recovery = self.recovery

            def recover() -> None:
                with quiet(target.instrument):
                    recovery(ctx)  # type: ignore[misc]

            recover.__module__ = module
            recover.__qualname__ = recover.__name__ = f"{self.name}[{target.spec}].recovery"
            kwargs["on_crash"] = recover
        return Prepared(scenario=self, target=target, fs=fs, fn=scenario, explore_kwargs=kwargs)


def saver_of(target: Target) -> str:
    """How a manager target saves: what its class declares as ``async_checkpointer`` ("thread" unless it says)."""
    said = getattr(target.io_class, "async_checkpointer", "thread")
    return said if isinstance(said, str) else "thread"


def define(name: str, workload: Callable[[Context], None], **options: Any) -> Scenario:
    """A Scenario whose oracle sentence is the workload's docstring (first paragraph), and whose reader is named by
    the docstring's "Reader: <key>." paragraph: one source for the docs and ``racecheck list``."""
    doc = inspect.getdoc(workload) or ""
    paragraphs = doc.split("\n\n")
    oracle = " ".join(paragraphs[0].split())
    if not oracle:
        raise ValueError(f"scenario {name!r}: the workload needs a docstring stating its oracle")
    said = [p.split(None, 2)[1].rstrip(".") for p in paragraphs if p.startswith("Reader:") and len(p.split()) > 1]
    if len(said) != 1 or said[0] not in READERS:
        raise ValueError(f"scenario {name!r}: the workload's docstring needs one 'Reader: <{'|'.join(READERS)}>.' "
                         "paragraph")
    return Scenario(name=name, oracle=oracle, workload=workload, reader=said[0], **options)
