"""Containers no other thread can reach: a function's local list, dict or set that it builds itself and never lets go.

An object only one thread can reach needs no record and no scheduling point (what it holds can change only on that
thread, and the moment it could reach another thread, through a store, an argument or a return, is an access of its
own). Finding such objects at run time costs a lookup per access; a common kind is plain in the syntax tree:

    threads = [threading.Thread(target=work) for _ in range(2)]
    for thread in threads:
        thread.start()

``threads`` is bound only to containers the function builds itself (a display, a comprehension, ``list()``,
``dict()``, ``set()``), and every use of it keeps the container in the function: an item read or written, a method
that neither stores it nor hands it out, iteration, ``in``, a truth test, ``len`` and the builtins that only read it,
unpacking into a call or display. Any other use (an argument, a return, a store, a closure, an attribute other than
those methods) lets it go, and the name is watched as before. Generators and coroutines are left out (another
thread may resume the frame that holds the container), as are functions that read their own frame (``locals()``).

The items are what they are: ``threads[0]`` is not recorded, but the thread object it returns is watched as any other.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

__racecheck_engine__ = True

# Methods of list, dict and set that neither keep the container anywhere nor read another container.
KEEPING_METHODS = frozenset({
    "append", "insert", "pop", "remove", "clear", "sort", "reverse", "index", "count", "copy",  # list
    "get", "setdefault", "popitem", "keys", "values", "items",  # dict
    "add", "discard", "issubset", "issuperset", "isdisjoint",  # set (with its argument read: those stay hooked)
})
# Methods that read another container besides their own: the rewriter keeps their hook (the argument's read).
READING_METHODS = frozenset({
    "extend", "update", "union", "intersection", "difference", "symmetric_difference", "intersection_update",
    "difference_update", "symmetric_difference_update",
})
# Views and iterators that point back at the container: kept only where they are consumed at once.
VIEWS = frozenset({"keys", "values", "items"})
# Builtins that read a container and return something that does not hold it.
READING_BUILTINS = frozenset({
    "len", "sorted", "list", "tuple", "set", "frozenset", "sum", "min", "max", "any", "all", "bool",
})
_ITERATING_BUILTINS = frozenset({"enumerate", "reversed", "iter", "zip"})  # iterators: only when iterated at once
_FRESH_CALLS = frozenset({"list", "dict", "set"})
_FRESH_NODES = (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp)
_FRAME_READERS = frozenset({"locals", "vars", "eval", "exec", "dir", "breakpoint"})
_TRUTH_PARENTS = (ast.If, ast.While, ast.IfExp, ast.Assert, ast.BoolOp, ast.UnaryOp, ast.comprehension)
_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def private_containers(function: ast.FunctionDef | ast.AsyncFunctionDef, candidates: set[str],
                       builtin: Callable[[str], bool]) -> frozenset[str]:
    """Of ``candidates`` (the function's own locals: not parameters, not captured, not global or nonlocal), those
    that only ever hold a container the function built and never let it go. ``builtin(name)`` says whether a name
    the function calls is the builtin of that name (not shadowed by the module)."""
    if isinstance(function, ast.AsyncFunctionDef) or not candidates:
        return frozenset()
    parents: dict[ast.AST, ast.AST] = {}
    names: list[ast.Name] = []
    pending: list[tuple[ast.AST, bool]] = [(stmt, False) for stmt in function.body]
    for stmt in function.body:
        parents[stmt] = function
    while pending:
        node, nested = pending.pop()
        if isinstance(node, (ast.Yield, ast.YieldFrom, ast.Await)) and not nested:
            return frozenset()
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FRAME_READERS:
            return frozenset()
        if isinstance(node, ast.Name) and node.id in candidates:
            if nested:
                candidates = candidates - {node.id}
            else:
                names.append(node)
        inner = nested or isinstance(node, _NESTED) or (
            isinstance(node, ast.GeneratorExp) and not _consumed_at_once(node, parents, builtin))
        for child in ast.iter_child_nodes(node):
            parents[child] = node
            pending.append((child, inner))
    escaped = {name.id for name in names if not _keeps(name, parents, builtin)}
    return frozenset(candidates - escaped)


def _keeps(name: ast.Name, parents: dict[ast.AST, ast.AST], builtin: Callable[[str], bool]) -> bool:
    """Whether this use of the name keeps its container in the function (and, if it binds it, to a fresh one)."""
    parent = parents.get(name)
    if isinstance(name.ctx, ast.Store):
        if isinstance(parent, ast.Assign):
            return parent.targets == [name] and _fresh(parent.value, builtin)
        if isinstance(parent, ast.AnnAssign):
            return parent.value is not None and _fresh(parent.value, builtin)
        return isinstance(parent, ast.AugAssign)  # ``x += [...]``: the same container, changed in place
    if isinstance(name.ctx, ast.Del):
        return isinstance(parent, ast.Delete)
    if isinstance(parent, ast.AugAssign):
        return False  # the name as the value of another's augmented assignment
    if isinstance(parent, ast.Subscript) and parent.value is name:
        return True
    if isinstance(parent, ast.Attribute) and parent.value is name:
        call = parents.get(parent)
        if not (isinstance(call, ast.Call) and call.func is parent):
            return False
        if parent.attr in VIEWS:
            return _consumed_at_once(call, parents, builtin)
        return parent.attr in KEEPING_METHODS or parent.attr in READING_METHODS
    if isinstance(parent, (ast.For, ast.comprehension)) and parent.iter is name:
        return True
    if isinstance(parent, ast.Compare):
        return (name is not parent.left and len(parent.ops) == 1 and isinstance(parent.ops[0], (ast.In, ast.NotIn)))
    if isinstance(parent, _TRUTH_PARENTS):  # a comprehension's iterable is taken above: here, one of its ifs
        return _tested(name, parent, parents)
    if isinstance(parent, ast.Starred):
        return isinstance(parents.get(parent), (ast.Call, ast.List, ast.Tuple, ast.Set))
    if isinstance(parent, ast.Dict):
        return any(key is None and value is name for key, value in zip(parent.keys, parent.values, strict=True))
    if isinstance(parent, ast.keyword):
        return parent.arg is None
    if isinstance(parent, ast.Call) and name in parent.args:
        func = parent.func
        if not (isinstance(func, ast.Name) and builtin(func.id)):
            return False
        if func.id in READING_BUILTINS:
            return True
        return func.id in _ITERATING_BUILTINS and _consumed_at_once(parent, parents, builtin)
    return False


def _tested(node: ast.expr, parent: ast.AST | None, parents: dict[ast.AST, ast.AST]) -> bool:
    """Whether only the truth of ``node`` is used: the test of an ``if``, ``while``, conditional expression or
    ``assert``, the operand of ``not``, or an operand of ``and``/``or`` whose own value is only tested (``a or b``
    evaluates to an operand, which could let it go)."""
    if isinstance(parent, (ast.If, ast.While, ast.IfExp, ast.Assert)):
        return parent.test is node
    if isinstance(parent, ast.UnaryOp):
        return isinstance(parent.op, ast.Not)
    if isinstance(parent, ast.comprehension):
        return node in parent.ifs
    if isinstance(parent, ast.BoolOp):
        return _tested(parent, parents.get(parent), parents)
    return False


def _consumed_at_once(call: ast.expr, parents: dict[ast.AST, ast.AST], builtin: Callable[[str], bool]) -> bool:
    """A view, iterator or generator expression that a ``for`` or a comprehension iterates, or a reading builtin
    reads, right away."""
    parent = parents.get(call)
    if isinstance(parent, (ast.For, ast.comprehension)) and parent.iter is call:
        return True
    if isinstance(parent, ast.Call) and call in parent.args and isinstance(parent.func, ast.Name):
        return builtin(parent.func.id) and parent.func.id in READING_BUILTINS | _ITERATING_BUILTINS and (
            parent.func.id in READING_BUILTINS or _consumed_at_once(parent, parents, builtin))
    return False


def _fresh(value: ast.expr, builtin: Callable[[str], bool]) -> bool:
    """A container the function builds itself, right here."""
    if isinstance(value, _FRESH_NODES):
        return True
    return (isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in _FRESH_CALLS
            and builtin(value.func.id))
