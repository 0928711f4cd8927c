"""The memory rewriter's reads (``racecheck.control.rewrite``): expressions whose evaluation reads shared state.

Attributes, items and slices, the globals some function rebinds and the closure cells worth watching, the callee of
a call (and, for a container method or a builtin that reads a container, the call itself, through ``__rc_fn__`` and
``__rc_gm__``), membership, unpacking, and the truth test of a value that may be a container (its length, a read of
it). Each becomes a hook that takes its operands in the order Python evaluates them and makes the access itself.
Reads of what only this call of the function can reach (``RewriteContext.private``) keep no hook.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

from racecheck.control.private_locals import KEEPING_METHODS, READING_BUILTINS
from racecheck.control.rewrite_context import RewriteContext
from racecheck.control.rewrite_nodes import (
    CALLEE,
    CELL_READ,
    CONTAINS,
    FRAME_SENSITIVE,
    GETATTR,
    GETITEM,
    GLOBAL_READ,
    INERT_BUILTINS,
    ITERATE,
    METHOD,
    PLAIN_RESULT_BUILTINS,
    SLICE,
    TRUTH,
    UNPACK,
    cell,
    hook,
    literal,
    mangle,
)

__racecheck_engine__ = True


class Reads:
    """Rewrites the reads of one module's expressions; ``visit`` is the walk's own (``rewrite.Rewriter.visit``),
    by which an expression's operands are rewritten first."""

    def __init__(self, context: RewriteContext, visit: Callable[[ast.AST], Any]) -> None:
        self.context = context
        self.visit = visit
        self.plain_results: set[int] = set()  # calls (by id) whose result is never a container (no truth hook)

    def name(self, node: ast.Name) -> ast.AST:
        context = self.context
        if not context.in_code() or not isinstance(node.ctx, ast.Load):
            return node
        how, owner = context.scope.resolve(node.id)
        if how == "global" and node.id in context.scopes.rebound:
            reader = hook(GLOBAL_READ, literal(context.module), literal(node.id))
        elif how in ("cell", "local") and owner is not None and owner.watched_cell(node.id):
            reader = hook(CELL_READ, cell(node.id), literal(node.id))
        else:
            return node
        return ast.copy_location(ast.BoolOp(op=ast.Or(), values=[reader, node]), node)

    def attribute(self, node: ast.Attribute) -> ast.AST:
        node.value = self.visit(node.value)
        if not self.context.in_code() or not isinstance(node.ctx, ast.Load):
            return node
        return ast.copy_location(hook(GETATTR, node.value, literal(mangle(node.attr, self.context.klass))), node)

    def subscript(self, node: ast.Subscript) -> ast.AST:
        node.value = self.visit(node.value)
        node.slice = self.slice(node.slice)
        if not self.context.in_code() or not isinstance(node.ctx, ast.Load) or self.context.private(node.value):
            return node
        return ast.copy_location(hook(GETITEM, node.value, node.slice), node)

    def slice(self, node: ast.AST) -> ast.expr:
        """A subscript's index as a value: ``a:b`` is ``slice(a, b)`` once it leaves the subscript."""
        if isinstance(node, ast.Slice):
            parts = [self.visit(p) if p is not None else literal(None) for p in (node.lower, node.upper, node.step)]
            return ast.copy_location(hook(SLICE, *parts), node)
        if isinstance(node, ast.Tuple) and any(isinstance(e, ast.Slice) for e in node.elts):
            node.elts = [self.slice(e) for e in node.elts]
            return node
        if type(node).__name__ == "Index":  # pragma: no cover - 3.8's wrapper, kept for safety
            return self.visit(node.value)  # type: ignore[attr-defined]
        return self.visit(node)

    def call(self, node: ast.Call) -> ast.AST:
        context = self.context
        func = node.func
        if context.builtin_named(func, PLAIN_RESULT_BUILTINS):
            self.plain_results.add(id(node))
        # ``vars(obj)`` reads an object (a hand-off: ``racecheck.control.handoff``); ``vars()`` reads the frame
        sensitive = isinstance(func, ast.Name) and func.id in FRAME_SENSITIVE and not (func.id == "vars" and node.args)
        method = isinstance(func, ast.Attribute) and context.in_code()
        if method:
            assert isinstance(func, ast.Attribute)
            func.value = self.visit(func.value)
        else:
            node.func = self.visit(func)
        node.args = [self.visit(a) for a in node.args]
        for keyword in node.keywords:
            keyword.value = self.visit(keyword.value)
            if keyword.arg is None and context.in_code() and not context.private(keyword.value):
                keyword.value = hook(UNPACK, keyword.value)
        if method:
            assert isinstance(func, ast.Attribute)
            if not (context.private(func.value) and func.attr in KEEPING_METHODS):
                node.func = ast.copy_location(hook(METHOD, func.value, literal(mangle(func.attr, context.klass))),
                                              func)
        elif (isinstance(func, ast.Name) and func.id in READING_BUILTINS and node.args and not node.keywords
              and all(context.private(a) for a in node.args)):
            pass  # ``len(private)``: reads only what no other thread can reach
        elif context.in_code() and not sensitive and not context.builtin_named(func, INERT_BUILTINS):
            node.func = ast.copy_location(hook(CALLEE, node.func), func)
        return node

    def compare(self, node: ast.Compare) -> ast.AST:
        node.left = self.visit(node.left)
        node.comparators = [self.visit(c) for c in node.comparators]
        if not self.context.in_code() or len(node.ops) != 1 or not isinstance(node.ops[0], (ast.In, ast.NotIn)):
            return node
        if self.context.private(node.comparators[0]):
            return node
        test = ast.copy_location(hook(CONTAINS, node.left, node.comparators[0]), node)
        if isinstance(node.ops[0], ast.NotIn):
            return ast.copy_location(ast.UnaryOp(op=ast.Not(), operand=test), node)
        return test

    def bool_op(self, node: ast.BoolOp) -> ast.AST:
        node.values = [self.truth(self.visit(v)) for v in node.values]
        return node

    def unary_op(self, node: ast.UnaryOp) -> ast.AST:
        node.operand = self.visit(node.operand)
        if isinstance(node.op, ast.Not):
            node.operand = self.truth(node.operand)
        return node

    def if_exp(self, node: ast.IfExp) -> ast.AST:
        node.test = self.truth(self.visit(node.test))
        node.body = self.visit(node.body)
        node.orelse = self.visit(node.orelse)
        return node

    def starred(self, node: ast.Starred) -> ast.AST:
        node.value = self.visit(node.value)
        if self.context.in_code() and isinstance(node.ctx, ast.Load) and not self.context.private(node.value):
            node.value = hook(UNPACK, node.value)
        return node

    def dict_display(self, node: ast.Dict) -> ast.AST:
        node.keys = [None if k is None else self.visit(k) for k in node.keys]
        node.values = [self.visit(v) for v in node.values]
        if self.context.in_code():
            private = self.context.private
            node.values = [hook(UNPACK, v) if k is None and not private(v) else v
                           for k, v in zip(node.keys, node.values, strict=True)]
        return node

    def truth(self, node: ast.expr) -> ast.expr:
        """A value whose truth is tested: a container's truth is its length, a read of it."""
        if not self.context.in_code() or not isinstance(node, (ast.Name, ast.Attribute, ast.Subscript, ast.Call)):
            return node
        if self.context.private(node) or id(node) in self.plain_results:
            return node
        return ast.copy_location(hook(TRUTH, node), node)

    def iterated(self, node: ast.expr) -> ast.expr:
        """A value iterated (by ``for`` or a comprehension): a read of the whole of it."""
        if not self.context.in_code() or self.context.private(node) or self.context.private_view(node):
            return node
        return ast.copy_location(hook(ITERATE, node), node)
