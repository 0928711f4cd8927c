"""Bringing a module's functions under memory watch, module by module, as the code under test reaches them.

A module is rewritten (``racecheck.control.rewrite``) and compiled once per process, then, for one exploration at a
time, every function of it that can be found gets the rewritten code (``function.__code__``): the functions of its
namespace, the methods, properties, static and class methods of its classes, what decorators wrapped
(``__wrapped__``), and closures as they come by. When the exploration ends, every function gets its own code back,
pass or fail; a closure made from rewritten code during the exploration keeps it (its hooks do nothing outside a
run).

Which modules: those control by default reaches (``autocontrol.controlled_module``: not the engine's, not the
standard library's, not ``exclude=``), when they are reached, not before: rewriting everything a process has
imported (torch alone is over a thousand modules) would cost seconds. A module is reached when the test function
or a thread's target comes from it, when watched code is about to call one of its functions (``__rc_fn__``,
``__rc_gm__``), or uses an object of one of its classes (their methods, properties and dunders may run). Rewriting a
module while a run is going (``Run.stale``) means that run may have run some of that module's code unwatched: the
exploration runs it again (``racecheck.search.session``). What is never reached this way (a callback that only the
standard library or C code calls, of a module nothing else touched) runs unwatched (docs/control.md says so).
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import linecache
import sys
import types
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from operator import is_
from typing import Any

from racecheck import runtime
from racecheck.control import handoff, lines, memory_discovery, memory_hooks, rewrite_cache
from racecheck.control.autocontrol import Exclusions, controlled_module
from racecheck.control.memory_names import set_rebound
from racecheck.control.rewrite import rewrite_module
from racecheck.control.rewrite_nodes import CELL_MARK
from racecheck.runtime import watched_code

__racecheck_engine__ = True

_CO_KINDS = 0x0020 | 0x0080 | 0x0100 | 0x0200  # generator, coroutine, iterable coroutine, async generator


def code_key(code: types.CodeType) -> tuple[Any, ...]:
    """What matches a function's code with its rewritten twin: name, first line, signature, free variables."""
    return (code.co_name, code.co_firstlineno, code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount,
            code.co_varnames[: code.co_argcount + code.co_kwonlyargcount], code.co_freevars, code.co_flags & _CO_KINDS)


@dataclass
class Compiled:
    """One module's rewritten code: its functions' code by ``code_key`` (None where two share a key), and the
    globals its functions rebind."""

    codes: dict[tuple[Any, ...], types.CodeType | None]
    rebound: frozenset[str]
    rewritten: set[types.CodeType] = field(default_factory=set)


# (file name, module name, source digest, pytest-prepared) -> the module's rewritten code (None: cannot be
# rewritten): what makes the compiled code differ. Keyed by file name alone, two modules loaded from one file shared
# one entry (the second's functions named the first's globals: a data race between two objects), and a file edited
# and reloaded got its old rewritten code back, matched to the new functions by name and line.
_compiled: dict[tuple[str, str, bytes, bool], Compiled | None] = {}


def _nested(code: types.CodeType) -> Iterator[types.CodeType]:
    for const in code.co_consts:
        if isinstance(const, types.CodeType) and const.co_varnames[:1] != (CELL_MARK,):
            yield const
            yield from _nested(const)


def compiled_module(filename: str, name: str, namespace: dict[str, Any]) -> Compiled | None:
    """The rewritten code of the module ``name`` in ``filename`` (memoised per process by what makes it differ:
    ``_compiled``); None when it has no source or its source does not compile (then it runs unwatched)."""
    linecache.checkcache(filename)  # an edited file's lines, not those read before the edit
    try:
        source = "".join(linecache.getlines(filename, namespace))
    except (SyntaxError, ValueError, UnicodeDecodeError):
        source = ""
    prepare = _imported_as(namespace, source, filename) if source else None
    key = (filename, name, hashlib.sha256(source.encode("utf-8", "surrogatepass")).digest(), prepare is not None)
    if key in _compiled:
        return _compiled[key]
    found: Compiled | None = None
    try:
        if source:
            module_code, rebound = _rewritten(source, filename, name, prepare)
            codes: dict[tuple[Any, ...], types.CodeType | None] = {}
            every: set[types.CodeType] = set()
            for code in _nested(module_code):
                code_id = code_key(code)
                codes[code_id] = None if code_id in codes else code
                every.add(code)
                every.update(c for c in code.co_consts if isinstance(c, types.CodeType))
            found = Compiled(codes, rebound, every)
            watched_code.add(every)
    except (SyntaxError, ValueError, RecursionError, MemoryError, UnicodeDecodeError):
        found = None
    _compiled[key] = found
    return found


def _rewritten(source: str, filename: str, name: str, prepare: Any) -> tuple[types.CodeType, frozenset[str]]:
    """The module's rewritten code, compiled, and the globals its functions rebind: from the disk cache
    (``rewrite_cache``) when a process before this one made it, else made here (and kept there); ``prepare``: what
    its import did to its tree first (``_imported_as``)."""
    if prepare is None:
        kept = rewrite_cache.load(source, filename, name)
        if kept is not None:
            return kept
    rewritten = rewrite_module(source, filename, name, prepare)
    module_code = compile(rewritten.tree, filename, "exec", dont_inherit=True)
    if prepare is None:
        rewrite_cache.store(source, filename, name, module_code, rewritten.rebound)
    return module_code, rewritten.rebound


def _imported_as(namespace: dict[str, Any], source: str, filename: str) -> Any:
    """What the module's import did to its syntax tree before compiling it, to do again before rewriting: pytest's
    assertion rewriting for a test module it imported (its globals have ``@py_builtins``), so that a failing
    ``assert`` still explains itself (``assert 1 == 2``) when memory is watched. None for any other module."""
    if "@py_builtins" not in namespace or "_pytest.assertion.rewrite" not in sys.modules:
        return None
    rewrite_asserts = sys.modules["_pytest.assertion.rewrite"].rewrite_asserts

    def prepare(tree: Any) -> None:
        rewrite_asserts(tree, source.encode("utf-8"), filename)

    return prepare


# The test runner's own code: pytest's assertion helpers run only when an assertion fails, and rewriting them then
# would make that failing run stale (run again, which a test that keeps state across schedules then passes). Their
# memory is never the program's.
_RUNNER = frozenset({"_pytest", "pytest", "pluggy"})


def _watchable(name: Any, namespace: dict[str, Any], excluded: Exclusions) -> bool:
    """Whether memory watching rewrites this module: one control by default reaches, not the test runner's."""
    return controlled_module(name, namespace, excluded) and name.partition(".")[0] not in _RUNNER


class Watching(memory_discovery.Discovery):
    """One exploration's memory watch: which modules are rewritten, which functions got rewritten code (to be given
    their own back), and the discovery the hooks call."""

    def __init__(self, excluded: Iterable[Any] = ()) -> None:
        self.excluded = Exclusions(excluded)
        self.modules: dict[str, Compiled | None] = {}  # module name -> its compiled code, as far as reached
        self.swapped: list[tuple[types.FunctionType, types.CodeType]] = []
        self.pending: dict[str, list[types.FunctionType]] = {}  # file name -> functions of a module not reached yet
        self.active = False

    # ----- discovery (called by the hooks, on a controlled thread) ---------------------------------------------

    def function(self, fn: Any) -> None:
        code = fn.__code__
        if memory_discovery.is_settled(code):  # rewritten, or left as it is (a sampled run's unwatched code)
            return
        namespace = fn.__globals__
        name = namespace.get("__name__")
        if not _watchable(name, namespace, self.excluded):
            memory_discovery.settle(code)
            if not _own(name, namespace):
                memory_discovery.unwatched.add(code)
            return
        compiled = self.module(name, namespace, code.co_filename)
        if fn.__code__ is code:
            self._swap(fn, compiled)
        if compiled is None:
            memory_discovery.unwatched.add(code)
        memory_discovery.settle(fn.__code__)

    def type_(self, cls: type) -> None:
        for klass in getattr(cls, "__mro__", (cls,)):
            module = sys.modules.get(getattr(klass, "__module__", "") or "")
            if module is not None and _watchable(module.__name__, module.__dict__, self.excluded):
                self.module(module.__name__, module.__dict__, module.__dict__.get("__file__"))

    # ----- modules ----------------------------------------------------------------------------------------------

    def module(self, name: str, namespace: dict[str, Any], filename: str | None) -> Compiled | None:
        """Rewrite module ``name`` for this exploration, if not done yet; its compiled code (None: unwatched)."""
        if name in self.modules:
            return self.modules[name]
        compiled = compiled_module(filename, name, namespace) if filename else None
        self.modules[name] = compiled
        if compiled is None:
            return None
        set_rebound(name, compiled.rebound)
        for code in compiled.rewritten:
            memory_discovery.settle(code)
        run = runtime.current_run()
        if run is not None:
            run.stale = True  # some of this module's code may have run unwatched in this run already
        own, elsewhere = _functions_of(namespace, filename)
        for fn in own:
            self._swap(fn, compiled)
        for fn in elsewhere:
            self._elsewhere(fn)
        for fn in self.pending.pop(filename, ()):
            self._swap(fn, compiled)
        return compiled

    def rewritten_between(self, start: int, end: int) -> tuple[str, ...]:
        """The modules rewritten after the first ``start`` were reached and before the first ``end`` (``modules``
        keeps the order they were reached in): what a run that began with ``end`` of them watched beyond a run that
        began with ``start``."""
        names = list(self.modules)[start:end]
        return tuple(name for name in names if self.modules[name] is not None)

    def bring(self, names: Iterable[str]) -> None:
        """Bring the named modules under watch now, between runs, importing any not imported yet: what earlier
        schedules of the exploration that recorded a token had brought, so its replay watches the same code.
        ImportError when one cannot be imported here."""
        for name in names:
            module = sys.modules.get(name)
            if module is None:
                module = importlib.import_module(name)
            namespace = module.__dict__
            if _watchable(name, namespace, self.excluded):
                self.module(name, namespace, namespace.get("__file__"))

    def _swap(self, fn: types.FunctionType, compiled: Compiled | None) -> None:
        code = fn.__code__
        if compiled is None or code in compiled.rewritten:
            return
        twin = compiled.codes.get(code_key(code))
        if twin is None or len(twin.co_freevars) != len(fn.__closure__ or ()):
            return
        fn.__code__ = twin
        self.swapped.append((fn, code))
        lines.new_code(twin)

    def _elsewhere(self, fn: types.FunctionType) -> None:
        """A function of another module met while walking one: rewritten now if its module is, else later."""
        name = fn.__globals__.get("__name__")
        compiled = self.modules.get(name) if isinstance(name, str) else None
        if compiled is not None:
            self._swap(fn, compiled)
        elif name not in self.modules and _watchable(name, fn.__globals__, self.excluded):
            self.pending.setdefault(fn.__code__.co_filename, []).append(fn)

    # ----- the exploration --------------------------------------------------------------------------------------

    def restore(self) -> None:
        """Every function gets its own code back."""
        swapped, self.swapped = self.swapped, []
        for fn, code in reversed(swapped):
            fn.__code__ = code
        self.pending.clear()


def _own(name: Any, namespace: dict[str, Any]) -> bool:
    """racecheck's own code (the engine, a facade, the package): what it touches it records itself."""
    return ("__racecheck_engine__" in namespace or "__racecheck_facade__" in namespace
            or (isinstance(name, str) and name.partition(".")[0] == "racecheck"))


# file name -> (namespace, the classes walked, what the walk read of both, its own functions, the others'): a walk
# of torch's namespace and classes takes milliseconds, and every exploration walks every module it reaches again
_walks: dict[str, tuple[Any, tuple[type, ...], Any, list[types.FunctionType], list[types.FunctionType]]] = {}


def _read(namespace: dict[str, Any], classes: tuple[type, ...]) -> Any:
    return tuple(namespace.values()), tuple(tuple(cls.__dict__.values()) for cls in classes)


def _unchanged(memo: tuple[Any, ...], namespace: dict[str, Any]) -> bool:
    """Whether the namespace and classes a walk read still hold the very same objects (by identity: a value that is
    not the same object is a change, whatever its ``==`` would say)."""
    if memo[0] is not namespace:
        return False
    then_values, then_classes = memo[2]
    now_values, now_classes = _read(namespace, memo[1])
    if len(now_values) != len(then_values) or any(
            len(a) != len(b) for a, b in zip(now_classes, then_classes, strict=True)):
        return False
    # map(is_, ...) walks both in C (the lengths are equal): this runs a few times per schedule on big namespaces
    return all(map(is_, now_values, then_values)) and all(
        all(map(is_, now, then)) for now, then in zip(now_classes, then_classes, strict=True))


def _functions_of(
    namespace: dict[str, Any], filename: str,
) -> tuple[list[types.FunctionType], list[types.FunctionType]]:
    """Every function reachable from a module's namespace whose code is the module's own, and the functions of other
    modules met on the way (they wait for their module). Kept per process while the namespace and the classes walked
    hold the same objects (checked value by value, by identity: far cheaper than the walk)."""
    memo = _walks.get(filename)
    if memo is not None and _unchanged(memo, namespace):
        return memo[3], memo[4]
    own: list[types.FunctionType] = []
    elsewhere: list[types.FunctionType] = []
    classes: list[type] = []
    seen: set[int] = set()
    pending_values = list(namespace.values())
    module_name = namespace.get("__name__")
    while pending_values:
        value = pending_values.pop()
        if id(value) in seen:
            continue
        seen.add(id(value))
        if isinstance(value, types.FunctionType):
            (own if value.__code__.co_filename == filename else elsewhere).append(value)
            wrapped = value.__dict__.get("__wrapped__") if hasattr(value, "__dict__") else None
            if wrapped is not None:
                pending_values.append(wrapped)
        elif isinstance(value, (staticmethod, classmethod)):
            pending_values.append(value.__func__)
        elif isinstance(value, property):
            pending_values.extend(f for f in (value.fget, value.fset, value.fdel) if f is not None)
        elif isinstance(value, type):
            if getattr(value, "__module__", None) == module_name:
                classes.append(value)
                pending_values.extend(value.__dict__.values())
        else:
            inner = _wrapped_function(value)
            if inner is not None:
                pending_values.append(inner)
    walked = tuple(classes)
    _walks[filename] = (namespace, walked, _read(namespace, walked), own, elsewhere)
    return own, elsewhere


def _wrapped_function(value: Any) -> Any:
    """The function inside a wrapper object (``functools.lru_cache``, ``partial``-like objects), if any.

    Read from the object's own attributes, never through ``getattr``: that would run the program's code (a module's
    ``__getattr__``, torch's among them, or a lazy object's) on the thread under test, once per process, so a
    process that had walked the module before would record fewer steps than a fresh one and a token found in one
    would not replay in the other."""
    try:
        attributes = object.__getattribute__(value, "__dict__")
    except Exception:  # noqa: BLE001 - no instance dictionary (slots, builtins), or a descriptor that raises
        return None
    inner = attributes.get("__wrapped__") if type(attributes) is dict else None
    return inner if isinstance(inner, types.FunctionType) else None


_active: Watching | None = None


@contextmanager
def watching(excluded: Iterable[Any] = (), roots: Iterable[Any] = ()) -> Iterator[Watching]:
    """Memory watch for one exploration: the hooks bound, ``roots`` (the test function, recovery checks) reached
    before anything runs, everything given back at the end."""
    global _active
    memory_hooks.install()
    memory_discovery.reset()
    handoff.reset()
    watch = Watching(excluded)
    previous = memory_discovery.discovery
    memory_discovery.discovery = watch
    _active = watch
    try:
        for root in roots:
            reach(watch, root)
        yield watch
    finally:
        _active = None
        memory_discovery.discovery = previous
        watch.restore()
        memory_discovery.reset()


def reach(watch: Watching, target: Any) -> None:
    """Bring ``target`` (a function, bound method, class or callable object) under watch before it runs; for a
    ``functools.partial`` or an object wrapping a function (``__wrapped__``: the pytest plugin's schedule body),
    what it calls too, since only engine, standard-library or C code stands between them."""
    fn = getattr(target, "__func__", target)
    if isinstance(fn, types.FunctionType):
        watch.function(fn)
    elif isinstance(target, type):
        watch.type_(target)
    elif isinstance(target, functools.partial):
        reach(watch, target.func)
    elif target is not None and not isinstance(target, types.BuiltinFunctionType):
        watch.type_(type(target))
        inner = _wrapped_function(target)
        if inner is not None:
            watch.function(inner)


def reach_now(target: Any, values: tuple[Any, ...] = ()) -> None:
    """``runtime.reach`` in the current exploration, if memory is watched: ``target`` comes under watch, and the
    calling thread names what it hands over (``values``, the target's bound object, its closure's contents)."""
    if _active is None:
        return
    reach(_active, target)
    run = runtime.current_run()
    watch = getattr(run, "watch", None)
    if watch is None:
        return
    fn = getattr(target, "__func__", target)
    handed = [getattr(target, "__self__", None), *values]
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            handed.append(cell.cell_contents)
        except ValueError:  # an empty cell
            pass
    for value in handed:
        if value is not None and not isinstance(value, _UNNAMED):
            watch.name_of(value)


_UNNAMED = (int, float, complex, bool, str, bytes, tuple, frozenset, range, type, types.ModuleType,
            types.FunctionType, types.BuiltinFunctionType, types.MethodType)


runtime.on_reach(reach_now)
