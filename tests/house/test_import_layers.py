"""The architecture the folders show, checked against the source (issue 27): each layer imports only the layers
below it, no import cycle (imports inside functions included), and no module reaches into another's private names.
"""

from __future__ import annotations

import ast

import import_graph
import pytest

MODULES = import_graph.load()

# Bottom to top. A module may import its own layer's modules and any layer with a lower rank; fakefs and search
# share a rank because neither needs the other (the engine finds the fake filesystem through the runtime's
# provider table, by name).
LAYERS = (
    (0, "errors", ("racecheck.errors",)),
    (1, "runtime", ("racecheck.runtime",)),
    (2, "sync", ("racecheck.sync",)),
    (3, "control", ("racecheck.control",)),
    (4, "fakefs", ("racecheck.fakefs",)),
    (4, "search", ("racecheck.search",)),
    (5, "report", ("racecheck.report",)),
    (6, "api", ("racecheck.config", "racecheck.config_checks", "racecheck.api")),
    (7, "frontends", ("racecheck.frontends", "racecheck.pytest_plugin", "racecheck.__main__", "racecheck")),
    (8, "clients", ("racecheck.fixed_impl", "racecheck.scenarios")),
)


def layer_of(name: str) -> tuple[int, str]:
    best: tuple[int, int, str] | None = None
    for rank, layer, prefixes in LAYERS:
        for prefix in prefixes:
            if name == prefix or name.startswith(prefix + "."):
                if best is None or len(prefix) > best[0]:
                    best = (len(prefix), rank, layer)
    assert best is not None, f"{name} is in no layer: add it to LAYERS and docs/architecture.md"
    return best[1], best[2]


def test_every_module_has_a_layer():
    for name in MODULES:
        layer_of(name)


def test_each_layer_imports_only_the_layers_below_it():
    upward = []
    for name, module in sorted(MODULES.items()):
        rank, layer = layer_of(name)
        for target, line in module.imports:
            if target not in MODULES and target.rpartition(".")[0] in MODULES:
                target = target.rpartition(".")[0]
            target_rank, target_layer = layer_of(target)
            if target_layer != layer and target_rank >= rank:
                upward.append(f"{module.path.relative_to(import_graph.ROOT)}:{line} ({layer}) imports {target} "
                              f"({target_layer})")
    assert not upward, "\n".join(upward)


def test_no_import_cycles_counting_imports_inside_functions():
    assert import_graph.cycles(MODULES) == []


def test_the_cycle_check_sees_a_cycle_made_inside_a_function():
    """The check itself can fail: two modules importing each other, one of them inside a function."""
    fake = {
        "racecheck.a": import_graph.Module("racecheck.a", import_graph.ROOT, False, ast.parse(""),
                                           imports=[("racecheck.b", 1)]),
        "racecheck.b": import_graph.Module("racecheck.b", import_graph.ROOT, False, ast.parse(""),
                                           imports=[("racecheck.a", 9)]),
    }
    assert import_graph.cycles(fake) == [["racecheck.a", "racecheck.b"]]


def test_no_module_imports_another_modules_private_names():
    found = [f"{m.path.relative_to(import_graph.ROOT)}:{line} imports {full}"
             for m in MODULES.values() for full, line in m.private_imports]
    found += [f"{m.path.relative_to(import_graph.ROOT)}:{line} imports private module {target}"
              for m in MODULES.values() for target, line in m.imports
              if target.rpartition(".")[2].startswith("_") and not target.rpartition(".")[2].startswith("__")]
    assert not found, "\n".join(found)


def _private_names_defined(tree: ast.Module) -> set[str]:
    """Underscore names a module defines: functions, classes, methods, attributes set on self or at class level."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return {n for n in names if n.startswith("_") and not n.startswith("__")}


# Names the stdlib's own protocols call on objects we hand it: ``threading.Condition`` calls ``_is_owned``,
# ``_release_save`` and ``_acquire_restore`` on its lock: our lock stand-ins define them, our Condition calls them.
STDLIB_PROTOCOL = frozenset({"_is_owned", "_release_save", "_acquire_restore"})


def _is_self(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id in ("self", "cls")


def test_no_module_reaches_into_another_modules_private_attributes():
    """``obj._name`` where ``_name`` belongs to another racecheck module (a private method or attribute of one of
    its classes, or a module-level private name) is a reach-in: make it public with a docstring, or move the code.
    Private names of the stdlib and third parties (``threading._active``) are a separate matter and not counted."""
    defined = {name: _private_names_defined(m.tree) for name, m in MODULES.items()}
    owners: dict[str, set[str]] = {}
    for name, names in defined.items():
        for private in names:
            owners.setdefault(private, set()).add(name)
    found = []
    for name, module in sorted(MODULES.items()):
        for node in ast.walk(module.tree):
            if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
                if _is_self(node.value) or node.attr in defined[name] or node.attr in STDLIB_PROTOCOL:
                    continue
                others = owners.get(node.attr, set()) - {name}
                if others:
                    found.append(f"{module.path.relative_to(import_graph.ROOT)}:{node.lineno} .{node.attr} "
                                 f"(defined in {', '.join(sorted(others))})")
    assert not found, "\n".join(found)


@pytest.mark.parametrize("limit", [500])
def test_modules_stay_small(limit):
    """Aim for modules under ~500 lines: a larger one usually holds two jobs."""
    big = [f"{m.path.relative_to(import_graph.ROOT)}: {m.lines} lines" for m in MODULES.values() if m.lines > limit]
    assert not big, "\n".join(big)
