"""Per-strategy facts are read from the registry (``racecheck.search.registry``: systematic, reduces, samples_memory,
its own defaults), never from a strategy's name: no engine module compares a value with a strategy's name (issue
44, item 5). Read from the source with ``ast`` (``import_graph``); a planted comparison is caught.

The demo (``frontends/cli/demo.py``) is left out: it builds its own cells with named strategies and checks what it
asked of them."""

from __future__ import annotations

import ast

import import_graph
import pytest
from racecheck.search.registry import STRATEGY_NAMES

MODULES = import_graph.load()
EXEMPT = {"racecheck.search.registry", "racecheck.frontends.cli.demo"}


def _names(node: ast.expr) -> list[str]:
    """The strategy names a comparison's operand spells: a string, or a tuple, list or set of strings."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value] if node.value in STRATEGY_NAMES else []
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [name for element in node.elts for name in _names(element)]
    return []


def comparisons(tree: ast.AST) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for operand in (node.left, *node.comparators):
                names = _names(operand)
                if names:
                    found.append(f"line {node.lineno}: compares with {', '.join(names)}")
    return found


def _engine() -> list[import_graph.Module]:
    return [m for name, m in sorted(MODULES.items()) if name.startswith("racecheck.") and name not in EXEMPT
            and not name.startswith(("racecheck.fixed_impl", "racecheck.scenarios"))]


@pytest.mark.parametrize("module", _engine(), ids=lambda m: m.name)
def test_no_module_decides_by_a_strategy_name(module):
    assert not comparisons(module.tree), f"{module.name}: " + "; ".join(comparisons(module.tree))


@pytest.mark.parametrize("source", ['if strategy == "dpor": pass', 'ok = cfg.strategy in ("dfs", "dpor")',
                                   'x = "pct" != name'])
def test_a_planted_comparison_is_caught(source):
    assert comparisons(ast.parse(source))


def test_other_comparisons_pass():
    assert not comparisons(ast.parse('if kind == "info": pass\nok = mode in ("learn", "warm-up")\n'
                                     'name = "pct"\nfor s in ("pct", "random"): pass'))
