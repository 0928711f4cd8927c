"""What the memory rewriter writes (``racecheck.control.rewrite``): the hooks' names, and the few node builders its
parts (reads, ``rewrite_reads``; stores, ``rewrite_stores``) share.

The hooks are reached through names in ``builtins`` (``racecheck.control.memory_hooks.install`` binds them): a
rewritten function keeps its module's globals, and a name no module defines falls through to ``builtins``.
"""

from __future__ import annotations

import ast

__racecheck_engine__ = True

# The hooks, as builtins names (``racecheck.control.memory_hooks.install_builtins`` binds them).
GETATTR, SETATTR, DELATTR = "__rc_ga__", "__rc_sa__", "__rc_da__"
GETITEM, SETITEM, DELITEM = "__rc_gi__", "__rc_si__", "__rc_di__"
GLOBAL_READ, GLOBAL_WRITE, GLOBAL_DELETE = "__rc_gg__", "__rc_sg__", "__rc_dg__"
CELL_READ, CELL_WRITE = "__rc_gc__", "__rc_sc__"
CALLEE, METHOD, ITERATE, CONTAINS, TRUTH, UNPACK, INPLACE, SLICE, CONTEXT = (
    "__rc_fn__", "__rc_gm__", "__rc_it__", "__rc_in__", "__rc_tr__", "__rc_up__", "__rc_io__", "__rc_sl__",
    "__rc_cm__",
)
HOOK_NAMES = (
    GETATTR, SETATTR, DELATTR, GETITEM, SETITEM, DELITEM, GLOBAL_READ, GLOBAL_WRITE, GLOBAL_DELETE, CELL_READ,
    CELL_WRITE, CALLEE, METHOD, ITERATE, CONTAINS, TRUTH, UNPACK, INPLACE, SLICE, CONTEXT,
)
CELL_MARK = "__rc_cell"  # the parameter of the lambdas that hand a cell to the hooks (never a user's lambda)

# Calls that look at their caller's frame or scope: never given another callee expression.
# Builtins whose call neither reads nor changes a container (nor runs watched code the hooks could discover):
# the callee hook finds nothing to do for them, so a call by its builtin name gets none.
INERT_BUILTINS = frozenset({"isinstance", "issubclass", "callable", "id", "type", "int", "float", "hash", "ord",
                            "chr", "range"})
# Builtins whose result is never a container: testing its truth reads nothing (``if isinstance(x, T):``).
PLAIN_RESULT_BUILTINS = frozenset({"isinstance", "issubclass", "callable", "hasattr", "id", "len", "hash", "bool",
                                   "str", "repr", "int", "float", "ord", "chr"})
FRAME_SENSITIVE = frozenset({"super", "locals", "vars", "globals", "dir", "eval", "exec", "breakpoint"})

AUGMENTED = {
    ast.Add: "+=", ast.Sub: "-=", ast.Mult: "*=", ast.MatMult: "@=", ast.Div: "/=", ast.FloorDiv: "//=",
    ast.Mod: "%=", ast.Pow: "**=", ast.LShift: "<<=", ast.RShift: ">>=", ast.BitOr: "|=", ast.BitXor: "^=",
    ast.BitAnd: "&=",
}


def load(identifier: str) -> ast.Name:
    return ast.Name(id=identifier, ctx=ast.Load())


def literal(value: object) -> ast.Constant:
    return ast.Constant(value=value)


def hook(hook_name: str, *args: ast.expr) -> ast.Call:
    return ast.Call(func=load(hook_name), args=list(args), keywords=[])


def cell(name: str) -> ast.Lambda:
    """``lambda __rc_cell=None: name``: its closure holds the cell itself, which names the variable in a run."""
    args = ast.arguments(posonlyargs=[], args=[ast.arg(arg=CELL_MARK)], vararg=None, kwonlyargs=[],
                         kw_defaults=[], kwarg=None, defaults=[literal(None)])
    return ast.Lambda(args=args, body=load(name))


def mangle(name: str, klass: str | None) -> str:
    """The compiler's private-name mangling, which an attribute turned into a string constant no longer gets."""
    if klass is None or not name.startswith("__") or name.endswith("__") or "." in name:
        return name
    stripped = klass.lstrip("_")
    return f"_{stripped}{name}" if stripped else name


def plain_target(node: ast.expr) -> bool:
    """A target made only of names (``x``, ``a, (b, *c)``): nothing but local bindings, unless a name is shared."""
    if isinstance(node, ast.Name):
        return True
    if isinstance(node, (ast.Tuple, ast.List)):
        return all(plain_target(e.value if isinstance(e, ast.Starred) else e) for e in node.elts)
    return False
