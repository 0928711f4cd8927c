"""Run the running interpreter's own ``shutil`` / ``os.makedirs`` / ``os.walk`` code over the fake filesystem.

Why clones instead of re-implementations: the fake must fail exactly where CPython fails (``SameFileError`` for
``copyfile(a, a)``, ``copytree`` listing the source before creating the destination, ``move(d, d/e)`` refusing
to move a directory into itself, ...), and those algorithms change between Python versions. A clone is the real
function object's code with a private globals dict in which ``os`` and ``open`` are the fake-aware stand-ins,
so mounted paths reach the store and every other path still reaches the real OS through the same stand-ins.
The real modules are never modified: a clone is only called for calls that involve a mounted path.

Fast paths that pass real descriptors to the kernel (``sendfile``, ``fcopyfile``) are switched off in the clones'
globals, which is what CPython itself does on platforms without them. The ``dir_fd`` based ``rmtree`` runs for
posix semantics (the stand-ins take fake directory descriptors), the path-based one for windows, as on each OS.
"""

from __future__ import annotations

import os
import posixpath
import shutil
import types
from typing import Any


def clone_function(fn: types.FunctionType, namespace: dict) -> types.FunctionType:
    """``fn``'s code bound to ``namespace`` as its globals (defaults, closure, attributes kept)."""
    clone = types.FunctionType(fn.__code__, namespace, fn.__name__, fn.__defaults__, fn.__closure__)
    clone.__kwdefaults__ = dict(fn.__kwdefaults__) if fn.__kwdefaults__ else fn.__kwdefaults__
    clone.__qualname__ = fn.__qualname__
    clone.__doc__ = fn.__doc__
    clone.__module__ = fn.__module__
    clone.__dict__.update(fn.__dict__)
    return clone


def clone_module(real: types.ModuleType, overrides: dict[str, Any]) -> types.ModuleType:
    """A private copy of ``real`` whose own functions are clones running against ``overrides``.

    Defaults that refer to functions of the real module (``copy_function=copy2``) are remapped to the clones,
    so a default never leads back into the real module."""
    module = types.ModuleType(real.__name__, real.__doc__)
    namespace = module.__dict__
    namespace.update(real.__dict__)
    namespace.update(overrides)
    originals: dict[int, Any] = {}
    for name, value in real.__dict__.items():
        if name in overrides:
            continue
        if isinstance(value, types.FunctionType) and value.__globals__ is real.__dict__:
            namespace[name] = clone_function(value, namespace)
            originals[id(value)] = namespace[name]
    for value in list(namespace.values()):
        if isinstance(value, types.FunctionType) and value.__globals__ is namespace and value.__defaults__:
            value.__defaults__ = tuple(originals.get(id(d), d) for d in value.__defaults__)
    return module


def build(os_overrides: dict[str, Any], path_overrides: dict[str, Any], fake_open: Any) -> dict[str, Any]:
    """The cloned ``os`` / ``os.path`` / ``shutil`` namespaces over the given stand-ins."""
    path_clone = clone_module(posixpath, path_overrides)
    os_clone = clone_module(os, {**os_overrides, "path": path_clone})
    path_clone.__dict__["os"] = os_clone
    # genericpath's functions (samefile, ...) live in posixpath's namespace as imported names: clone them too.
    import genericpath

    genericpath_ns = dict(genericpath.__dict__)
    genericpath_ns["os"] = os_clone
    for name in ("samefile", "sameopenfile", "exists", "isfile", "isdir", "getsize", "getmtime", "getatime",
                 "getctime", "lexists", "islink"):
        fn = getattr(genericpath, name, None)
        if name in path_overrides or not isinstance(fn, types.FunctionType):
            continue
        path_clone.__dict__[name] = clone_function(fn, genericpath_ns)
    shutil_clone = _shutil_clone(os_clone, fake_open, fd_functions=False)
    shutil_fd_clone = _shutil_clone(os_clone, fake_open, fd_functions=True)
    return {"os": os_clone, "path": path_clone, "shutil": shutil_clone, "shutil_fd": shutil_fd_clone}


def _shutil_clone(os_clone: types.ModuleType, fake_open: Any, fd_functions: bool) -> types.ModuleType:
    """shutil over the stand-ins. ``fd_functions``: rmtree walks by directory descriptors (``_rmtree_safe_fd``),
    as CPython does on Linux; without, by path (``_rmtree_unsafe``), as on Windows. They differ where a path's
    components change under the walk: ``rmtree("d/..")`` removes ``d`` and then the rest by descriptor, while a
    walk by path finds ``d/..`` gone."""
    clone = clone_module(shutil, {"os": os_clone, "open": fake_open, "_USE_CP_SENDFILE": False,
                                  "_HAS_FCOPYFILE": False, "_use_fd_functions": fd_functions})
    ns = clone.__dict__
    if "_rmtree_impl" in ns:  # 3.13+: the implementation is chosen once at import
        ns["_rmtree_impl"] = ns["_rmtree_safe_fd" if fd_functions else "_rmtree_unsafe"]
    ns["rmtree"].__dict__["avoids_symlink_attacks"] = fd_functions
    return clone


__racecheck_engine__ = True  # the fake is part of the engine: never instrumented itself
