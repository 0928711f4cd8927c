"""The import graph of the racecheck package, read from its source with ``ast`` (nothing is imported).

Used by the house tests (layers, cycles, private names) so that the architecture the folders show is checked, not
described: an import inside a function counts like one at the top; one under ``if TYPE_CHECKING:`` does not, since
it never runs.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE_DIRS = {"racecheck": ROOT / "harness", "racecheck.fixed_impl": ROOT / "fixed_impl",
                "racecheck.scenarios": ROOT / "scenarios"}


@dataclass
class Module:
    name: str
    path: Path
    is_package: bool
    tree: ast.Module
    imports: list[tuple[str, int]] = field(default_factory=list)  # (racecheck module, line)
    private_imports: list[tuple[str, int]] = field(default_factory=list)  # ("module.name", line)

    @property
    def lines(self) -> int:
        return len(self.path.read_text().splitlines())


def _module_name(package: str, base: Path, path: Path) -> tuple[str, bool]:
    rel = path.relative_to(base).with_suffix("")
    parts = list(rel.parts)
    is_package = parts[-1] == "__init__"
    if is_package:
        parts = parts[:-1]
    return ".".join([package, *parts]), is_package


def _type_checking_lines(tree: ast.Module) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            test = node.test
            name = test.id if isinstance(test, ast.Name) else test.attr if isinstance(test, ast.Attribute) else ""
            if name == "TYPE_CHECKING":
                for child in node.body:
                    lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


def load() -> dict[str, Module]:
    modules: dict[str, Module] = {}
    for package, base in PACKAGE_DIRS.items():
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
            here = Path(dirpath)
            for filename in sorted(filenames):
                if filename.endswith(".py"):
                    path = here / filename
                    name, is_package = _module_name(package, base, path)
                    modules[name] = Module(name, path, is_package, ast.parse(path.read_text(), str(path)))
    for module in modules.values():
        _read_imports(module, modules)
    return modules


def _read_imports(module: Module, modules: dict[str, Module]) -> None:
    skip = _type_checking_lines(module.tree)
    package = module.name if module.is_package else module.name.rpartition(".")[0]
    for node in ast.walk(module.tree):
        if getattr(node, "lineno", None) in skip:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "racecheck":
                    module.imports.append((alias.name, node.lineno))
        elif isinstance(node, ast.ImportFrom):
            source = from_source(node, package)
            if source.split(".")[0] != "racecheck":
                continue
            for alias in node.names:
                full = f"{source}.{alias.name}"
                if full in modules:
                    module.imports.append((full, node.lineno))
                else:
                    module.imports.append((source, node.lineno))
                    if alias.name.startswith("_") and not alias.name.startswith("__"):
                        module.private_imports.append((full, node.lineno))


def cycles(modules: dict[str, Module]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    graph = {name: sorted({target for target, _ in m.imports if target in modules and target != name})
             for name, m in modules.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(node: str) -> None:
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for name in sorted(graph):
        if name not in index:
            visit(name)
    return found


def from_source(node: ast.ImportFrom, package: str) -> str:
    """The module a ``from ... import`` reads from, a relative one resolved against ``package``."""
    if not node.level:
        return node.module or ""
    parts = package.split(".")
    base = ".".join(parts[: len(parts) - node.level + 1])
    return f"{base}.{node.module}" if node.module else base
