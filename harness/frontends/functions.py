"""The catalogue behind ``racecheck explore``: any zero-argument function, named ``MODULE:FUNCTION`` or by a pytest
node id (``path/test_x.py::test_name``), as a one-scenario catalogue.

It speaks the catalogue API of :mod:`racecheck.scenarios` (``get``, ``load_target``, ``ScenarioError``, ``CATALOGUE``,
``STOCK_TARGET``, a scenario's ``build(target, fs)``), so ``racecheck explore`` runs through the same cells, chunks,
worker processes, progress display, reports and ``rcc1`` tokens as ``racecheck run``, and ``racecheck replay`` finds
the function again in a fresh process from the token alone: the token's target is the function's spec, its
semantics ``real`` (no fake filesystem) or a fake filesystem's ``posix``/``windows``.

Importing resolves names as ``python -m`` and pytest's default import mode do: the working directory first on
``sys.path``; a test file by path is imported under the name its package (its folders with ``__init__.py``) gives it,
with the folder above that package on ``sys.path``.
"""

from __future__ import annotations

import importlib
import inspect
import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__racecheck_engine__ = True

SCENARIO = "function"
SEMANTICS = ("real", "posix", "windows")
STOCK_TARGET = None  # explore always names its function
_MODULE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
_QUALNAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


class ScenarioError(Exception):
    """A function spec that cannot be explored (not importable, no such function, needs arguments); one line."""


def cwd_on_path() -> None:
    """The working directory first on ``sys.path``, as ``python -m`` puts it (a console script does not)."""
    here = os.getcwd()
    if "" not in sys.path and here not in sys.path:
        sys.path.insert(0, here)


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _import_file(path: str) -> tuple[Any, str]:
    """Import the test file ``path`` as pytest's prepend mode does; (module, the module's name)."""
    full = os.path.abspath(path)
    if not os.path.isfile(full):
        raise ScenarioError(f"no such file {path!r}")
    if not full.endswith(".py"):
        raise ScenarioError(f"{path!r} is not a Python file")
    folder, name = os.path.split(full[:-3])
    parts = [name]
    while os.path.isfile(os.path.join(folder, "__init__.py")):
        folder, package = os.path.split(folder)
        parts.insert(0, package)
    module_name = ".".join(parts)
    if not _MODULE.match(module_name):
        raise ScenarioError(f"{path!r} cannot be imported as a module (its name is {module_name!r})")
    if folder not in sys.path:
        sys.path.insert(0, folder)
    return _import(module_name), module_name


def _import(module_name: str) -> Any:
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and (module_name == exc.name or module_name.startswith(exc.name + ".")):
            raise ScenarioError(f"no module named {exc.name!r} (from {os.getcwd()})") from None
        raise ScenarioError(f"cannot import {module_name!r}: {_one_line(exc)}") from None
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - whatever importing user code raised
        raise ScenarioError(f"cannot import {module_name!r}: {_one_line(exc)}") from None


def _split(spec: str) -> tuple[Any, str, str]:
    """(module, its name, the function's dotted name) for ``MODULE:FUNCTION`` or ``path.py::name``."""
    if "::" in spec:
        path, _, qualname = spec.partition("::")
        qualname = qualname.replace("::", ".")
        if not path or not qualname:
            raise ScenarioError(f"{spec!r} must look like 'path/test_file.py::test_name'")
        module, module_name = _import_file(path)
    else:
        module_name, colon, qualname = spec.partition(":")
        if not colon or not _MODULE.match(module_name) or not qualname:
            raise ScenarioError(
                f"{spec!r} must look like 'package.module:function' or 'path/test_file.py::test_name'"
            )
        module = _import(module_name)
    if not _QUALNAME.match(qualname):
        raise ScenarioError(f"{qualname!r} is not a function name (parametrized tests cannot be explored here)")
    return module, module_name, qualname


def _needed(fn: Callable[..., Any]) -> list[str]:
    """The parameters a call without arguments would leave unfilled."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return []
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD,
             inspect.Parameter.KEYWORD_ONLY)
    return [p.name for p in signature.parameters.values() if p.kind in kinds and p.default is inspect.Parameter.empty]


def load_target(spec: str) -> Callable[[], Any]:
    """The zero-argument function ``spec`` names; ScenarioError with one line otherwise."""
    if not isinstance(spec, str) or not spec.strip():
        raise ScenarioError("name a function: MODULE:FUNCTION or path/test_file.py::test_name")
    cwd_on_path()
    module, module_name, qualname = _split(spec.strip())
    obj: Any = module
    for part in qualname.split("."):
        if not hasattr(obj, part):
            raise ScenarioError(f"module {module_name!r} has no function {qualname!r}")
        obj = getattr(obj, part)
    if inspect.isclass(obj) or not callable(obj):
        what = "class" if inspect.isclass(obj) else type(obj).__name__
        raise ScenarioError(f"{spec!r} is a {what}, not a function (explore calls a function with no arguments)")
    if inspect.iscoroutinefunction(obj) or inspect.isasyncgenfunction(obj):
        raise ScenarioError(f"{spec!r} is an async function; racecheck controls threads, not event loops")
    needed = _needed(obj)
    if needed:
        raise ScenarioError(
            f"{spec!r} needs arguments ({', '.join(needed)}); explore calls a function with none "
            "(wrap it in one that builds them, or use pytest --racecheck for a test with fixtures)"
        )
    return obj


@dataclass(frozen=True)
class Prepared:
    """The function bound to a filesystem: pass ``explore_kwargs`` to ``racecheck.explore``/``replay``."""

    fn: Callable[[], Any]
    fs: str
    explore_kwargs: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class FunctionScenario:
    """The one scenario: call the function; it passes when it returns, fails when it raises."""

    name: str = SCENARIO
    oracle: str = "the function returns without raising"
    semantics: tuple[str, ...] = SEMANTICS
    default_semantics: tuple[str, ...] = ("real",)

    def build(self, fn: Callable[[], Any], fs: str) -> Prepared:
        if fs not in self.semantics:
            raise ScenarioError(f"unknown semantics {fs!r} (choose {', '.join(self.semantics)})")
        return Prepared(fn, fs, {"fs": None if fs == "real" else fs})


CATALOGUE: dict[str, FunctionScenario] = {SCENARIO: FunctionScenario()}


def get(name: str) -> FunctionScenario:
    try:
        return CATALOGUE[name]
    except (KeyError, TypeError):
        raise ScenarioError(f"unknown scenario {name!r} (this catalogue has {SCENARIO!r} only)") from None
