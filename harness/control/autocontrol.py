"""Control by default: for the whole of an exploration, the stand-ins reach the code under test however it binds the
names, with no module list.

Three ways a name reaches code, three ways in (all undone by ``Installation.restore``, pass or fail):

* a global bound before the run (``import threading``, ``from time import sleep``): the identity swaps of
  ``racecheck.control.instrument`` are applied to the globals of every loaded module that is neither the engine's,
  nor the standard library's (its modules implement the primitives the stand-ins and the engine build on, and its
  own users, ``logging`` or ``subprocess``, keep what they had), nor excluded (``exclude=``);
* an import run during the exploration, inside a function or by a module first imported then: ``__import__`` and
  ``importlib.import_module`` hand the importer the module's facade instead of the module, when the importer is a
  controlled thread and its module is one the first rule swaps in. Modules imported during the exploration are
  given back the real objects when it ends;
* a builtin (``open`` for the fake filesystem) is replaced in ``builtins`` itself: its stand-in decides at call time.

Code a module runs while it is being imported by a controlled thread runs uncontrolled (the thread is unbound from
its run for the import): what it builds (a module-level lock, a background thread) outlives the run, and is real,
as it would have been had the module been imported before the exploration; and an import never yields, so it runs
the same in every schedule and in a replay where the module was not loaded yet.

Which swaps apply: the sync stand-ins' always, and those of each active extension (the fake filesystem's only with
``fs=``): ``instrument.swaps_for``. Which globals hold something to swap: ``racecheck.control.scan``, which remembers
the answer between explorations.
"""

from __future__ import annotations

import builtins
import importlib
import sys
import threading
import types
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from racecheck import runtime
from racecheck.control import dataclass_factories, instrument
from racecheck.control.scan import SCAN
from racecheck.runtime import RunContract

__racecheck_engine__ = True

# typing_extensions is the standard library's typing, backported: covered like the standard library (hand-offs, not
# rewriting). Watched, it made steps that follow the process's memory layout and history: its protocol metaclass's
# ``__eq__`` runs when a set or dict lookup meets classes whose ids collide, and its protocol check iterates a set
# of strings, so a token found in one process (a forked rank of pytest's) diverged in a fresh one.
_STDLIB = frozenset(sys.stdlib_module_names) | {"typing_extensions"}
# racecheck's own packages that are code under test like any other (docs/architecture.md: the clients)
CLIENT_PACKAGES = ("racecheck.fixed_impl", "racecheck.scenarios")

_state = runtime.thread_state
_real_import = builtins.__import__
_real_import_module = importlib.import_module
_modules = sys.modules


class _Importing(threading.local):
    """The run a controlled thread was unbound from while it imports (None elsewhere)."""

    run: Any = None
    thread: Any = None


_importing = _Importing()


class Exclusions:
    """Modules kept real: ``exclude=`` entries, each a module, a dotted name, or ``"pkg.*"`` (it and below)."""

    def __init__(self, targets: Iterable[Any] = ()) -> None:
        self.names: set[str] = set()
        prefixes = []
        for target in targets:
            if isinstance(target, types.ModuleType):
                self.names.add(target.__name__)
            elif isinstance(target, str) and target:
                if target.endswith(".*"):
                    self.names.add(target[:-2])
                    prefixes.append(target[:-1])
                else:
                    self.names.add(target)
            else:
                raise instrument.InstrumentError(
                    f"cannot exclude {target!r}: expected a module or a dotted module name")
        self.prefixes = tuple(prefixes)
        self.key = (frozenset(self.names), self.prefixes)

    def __contains__(self, name: str) -> bool:
        return name in self.names or (bool(self.prefixes) and name.startswith(self.prefixes))


def controlled_module(name: Any, namespace: dict, excluded: Exclusions) -> bool:
    """Whether control by default reaches this module: not the engine, not a facade, not the standard library,
    not excluded."""
    if not isinstance(name, str) or "__racecheck_engine__" in namespace or "__racecheck_facade__" in namespace:
        return False
    top = name.partition(".")[0]
    if top in _STDLIB:
        return False
    if top == "racecheck" and not name.startswith(CLIENT_PACKAGES):
        return False
    return name not in excluded


@dataclass
class Installation:
    """What control by default changed for one exploration, to be undone exactly."""

    swaps: dict[int, tuple[Any, Any]]
    excluded: Exclusions
    patch: instrument.Patch = field(default_factory=instrument.Patch)
    saved: list[tuple[Any, str, Any]] = field(default_factory=list)  # (owner, attribute, original)
    before: set[str] = field(default_factory=set)  # sys.modules' names when installed
    swapped_modules: int = 0

    def controls(self, importer: Any) -> bool:
        """Whether an import made from globals ``importer`` gets facades."""
        if not isinstance(importer, dict):
            return False
        return controlled_module(importer.get("__name__"), importer, self.excluded)

    def restore(self) -> None:
        global _current
        for owner, name, original in reversed(self.saved):
            setattr(owner, name, original)
        self.saved.clear()
        if _current is self:
            _current = None
            _facades.clear()
        self.patch.restore()
        self._give_back_new_modules()

    def _give_back_new_modules(self) -> None:
        """Modules imported during the exploration bound facades and stand-ins through the import hooks: the real
        objects again, as a module imported after the exploration would have them."""
        new = _modules.keys() - self.before
        if not new:
            return
        reverse = {id(rep): real for real, rep in self.swaps.values()}
        for name in new:
            namespace = getattr(_modules.get(name), "__dict__", None)
            if not isinstance(namespace, dict) or "__racecheck_engine__" in namespace:
                continue
            for key, value in list(namespace.items()):
                real = reverse.get(id(value))
                if real is not None:
                    namespace[key] = real


_current: Installation | None = None
_facades: dict[int, types.ModuleType] = {}  # the installation's: id(real module) -> its facade, for the hooks


def installed() -> bool:
    """Whether control by default is in place (an exploration is running in this process)."""
    return _current is not None


def install(groups: Iterable[str] = (), exclude: Iterable[Any] = ()) -> Installation:
    """Control by default for an exploration: the sync stand-ins and those of the extension ``groups``, in every
    loaded module but the engine's, the standard library's and ``exclude``'s. One installation at a time;
    ``restore()`` undoes it. Explicit instrumentation (``instrument.apply``), if any, goes after it."""
    global _current
    if _current is not None:
        raise RuntimeError("racecheck: control by default is already installed in this process")
    swaps = dict(instrument.swaps_for(groups))
    swaps[id(_real_import_module)] = (_real_import_module, _import_module)
    inst = Installation(swaps, Exclusions(exclude))
    inst.before = set(_modules)
    excluded = inst.excluded
    try:
        hits = SCAN.targets(frozenset(swaps), lambda name, namespace: controlled_module(name, namespace, excluded),
                            excluded.key)
        replaced = inst.patch.replaced
        for namespace, names in hits:
            for name in names:
                value = namespace.get(name)
                entry = swaps.get(id(value))
                if entry is not None and entry[0] is value:
                    replaced.append((namespace, name, value))
                    namespace[name] = entry[1]
        inst.swapped_modules = len(hits)
        # dataclass default factories captured at class definition (``field(default_factory=threading.Lock)``)
        dataclass_factories.swap([namespace for namespace, _ in hits], swaps, inst.saved)
        for name, replacement in instrument.builtin_swaps_for(groups).items():
            inst.saved.append((builtins, name, getattr(builtins, name)))
            setattr(builtins, name, replacement)
        inst.saved.append((builtins, "__import__", builtins.__import__))
        builtins.__import__ = _import
        inst.saved.append((importlib, "import_module", importlib.import_module))
        importlib.import_module = _import_module
        _facades.update((key, rep) for key, (_, rep) in swaps.items() if isinstance(rep, types.ModuleType))
        _current = inst
    except BaseException:
        inst.restore()
        raise
    return inst


# ----- the import hooks ----------------------------------------------------------------------------------------------


def _unbound(run: RunContract, call: Any, *args: Any) -> Any:
    """``call(*args)`` with the calling controlled thread unbound from ``run`` (see the module docstring). An import
    makes no scheduling point however long it takes (torch's takes seconds, some of them in one C call): the run
    counts it as a thread busy outside, as a wait on another process is, so the watchdog takes it for progress."""
    thread = _state.thread
    outer = _importing.run, _importing.thread
    _importing.run, _importing.thread = run, thread
    runtime.bind(None, None)
    run.outside = getattr(run, "outside", 0) + 1
    try:
        return call(*args)
    finally:
        run.outside -= 1
        runtime.bind(run, thread)
        _importing.run, _importing.thread = outer


def _import(name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0,
            _state: Any = _state, _modules: dict = _modules, _real_import: Any = _real_import) -> Any:
    """``builtins.__import__`` during an exploration: the real import, then the module's facade for a controlled
    importer; module code the import runs, runs unbound. Every import statement a controlled thread executes comes
    here, most of them of a module loaded long ago: that path is kept short (its names are bound as defaults)."""
    run = _state.run
    if run is None:
        module = _real_import(name, globals, locals, fromlist, level)
        if _importing.run is None:
            return module  # an uncontrolled thread: the real module, as ever
    elif level or name not in _modules:
        module = _unbound(run, _real_import, name, globals, locals, fromlist, level)
    elif fromlist:
        # loaded: the import runs no module code unless ``from`` names a submodule not imported yet ("*" may too)
        namespace = getattr(_modules[name], "__dict__", ())
        for item in fromlist:
            if item == "*" or item not in namespace:
                module = _unbound(run, _real_import, name, globals, locals, fromlist, level)
                break
        else:
            module = _real_import(name, globals, locals, fromlist, level)
    else:
        module = _real_import(name, globals, locals, fromlist, level)
    facade = _facades.get(id(module))
    if facade is None or _current is None or not _current.controls(globals):
        return module
    return facade


def _import_module(name: str, package: str | None = None) -> Any:
    """``importlib.import_module`` during an exploration, as ``_import`` does it."""
    run = _state.run
    if run is None:
        module = _real_import_module(name, package)
        if _importing.run is None:
            return module
    else:
        module = _unbound(run, _real_import_module, name, package)
    facade = _facades.get(id(module))
    if facade is None or _current is None or not _current.controls(sys._getframe(1).f_globals):
        return module
    return facade
