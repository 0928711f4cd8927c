"""The memory rewriter's stores (``racecheck.control.rewrite``): assignments, augmented assignments, deletions and
the targets of ``for``, ``with`` and the walrus, each stored through its hook in the language's own order (the value,
then each target left to right: its object, then its key, then the store)."""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

from racecheck.control.rewrite_context import RewriteContext
from racecheck.control.rewrite_nodes import (
    AUGMENTED,
    CELL_WRITE,
    CONTEXT,
    DELATTR,
    DELITEM,
    GETATTR,
    GETITEM,
    GLOBAL_DELETE,
    GLOBAL_WRITE,
    INPLACE,
    SETATTR,
    SETITEM,
    UNPACK,
    cell,
    hook,
    literal,
    load,
    mangle,
    plain_target,
)
from racecheck.control.rewrite_reads import Reads
from racecheck.control.scopes import Scope

__racecheck_engine__ = True


class Stores:
    """Rewrites the stores of one module's statements. ``visit`` and ``statements`` are the walk's own
    (``rewrite.Rewriter``): an expression, and a statement list in which one statement may become several; the reads
    of a store's operands are ``reads``'. Owns the temporary names (``__rc_t1``...) the stores need."""

    def __init__(self, context: RewriteContext, reads: Reads, visit: Callable[[ast.AST], Any],
                 statements: Callable[[list[ast.stmt]], list[ast.stmt]]) -> None:
        self.context = context
        self.reads = reads
        self.visit = visit
        self.statements = statements
        self.temps = 0

    def for_loop(self, node: ast.For | ast.AsyncFor) -> ast.AST | list[ast.stmt]:
        context = self.context
        node.iter = self.visit(node.iter)
        if context.in_code() and isinstance(node, ast.For):
            node.iter = self.reads.iterated(node.iter)
        node.body = self.statements(node.body)
        node.orelse = self.statements(node.orelse)
        if context.in_code() and not plain_target(node.target):
            temp = self._temp()
            assign = self._assign([node.target], load(temp), node)
            node.target = ast.Name(id=temp, ctx=ast.Store())
            node.body = [*assign, *node.body]
        return node

    def with_block(self, node: ast.With | ast.AsyncWith) -> ast.AST:
        context = self.context
        extra: list[ast.stmt] = []
        for item in node.items:
            item.context_expr = self.visit(item.context_expr)
            if context.in_code() and isinstance(node, ast.With):
                item.context_expr = ast.copy_location(hook(CONTEXT, item.context_expr), item.context_expr)
            if item.optional_vars is not None and context.in_code() and not plain_target(item.optional_vars):
                temp = self._temp()
                extra.extend(self._assign([item.optional_vars], load(temp), node))
                item.optional_vars = ast.Name(id=temp, ctx=ast.Store())
        node.body = [*extra, *self.statements(node.body)]
        return node

    def assign(self, node: ast.Assign) -> ast.AST | list[ast.stmt]:
        node.value = self.visit(node.value)
        if not self.context.in_code():
            return node
        if len(node.targets) == 1 and self._simple_store(node.targets[0]):
            return self._assign(node.targets, node.value, node)
        if all(plain_target(t) and not self.context.watched_name(t) for t in node.targets):
            node.value = self._unpacked(node.targets, node.value)
            return node
        temp = self._temp()
        first = ast.copy_location(ast.Assign(targets=[ast.Name(id=temp, ctx=ast.Store())], value=node.value), node)
        return [first, *self._assign(node.targets, load(temp), node)]

    def ann_assign(self, node: ast.AnnAssign) -> ast.AST | list[ast.stmt]:
        if node.value is None or not self.context.in_code():
            if node.value is not None:
                node.value = self.visit(node.value)
            return node
        node.value = self.visit(node.value)
        if isinstance(node.target, ast.Name) and not self.context.watched_name(node.target):
            return node
        return self._assign([node.target], node.value, node)

    def _unpacked(self, targets: list[ast.expr], value: ast.expr) -> ast.expr:
        """A value unpacked into several names reads it whole (``a, b = pair``)."""
        if any(isinstance(t, (ast.Tuple, ast.List)) for t in targets) and not self.context.private(value):
            return ast.copy_location(hook(UNPACK, value), value)
        return value

    def _simple_store(self, target: ast.expr) -> bool:
        return isinstance(target, (ast.Attribute, ast.Subscript)) or self.context.watched_name(target)

    def _assign(self, targets: list[ast.expr], value: ast.expr, where: ast.AST) -> list[ast.stmt]:
        """``t1 = t2 = value`` with each target stored through its hook, in the language's order (the value,
        then each target left to right: its object, then its key, then the store)."""
        out: list[ast.stmt] = []
        if len(targets) > 1 and not isinstance(value, ast.Name):
            temp = self._temp()
            out.append(ast.copy_location(ast.Assign(targets=[ast.Name(id=temp, ctx=ast.Store())], value=value),
                                         where))
            value = load(temp)
        for target in targets:
            out.extend(self._store(target, value, where))
        return out

    def _store(self, target: ast.expr, value: ast.expr, where: ast.AST) -> list[ast.stmt]:
        if isinstance(target, ast.Attribute):
            obj = self.visit(target.value)
            statement = hook(SETATTR, value, obj, literal(mangle(target.attr, self.context.klass)))
            return [ast.copy_location(ast.Expr(value=statement), where)]
        if isinstance(target, ast.Subscript):
            obj = self.visit(target.value)
            key = self.reads.slice(target.slice)
            if self.context.private(obj):
                target.slice = key
                return [ast.copy_location(ast.Assign(targets=[target], value=value), where)]
            return [ast.copy_location(ast.Expr(value=hook(SETITEM, value, obj, key)), where)]
        if isinstance(target, ast.Name):
            stored = self._name_store(target.id, value, self.context.scope)
            return [ast.copy_location(ast.Assign(targets=[ast.Name(id=target.id, ctx=ast.Store())],
                                                 value=stored), where)]
        if isinstance(target, (ast.Tuple, ast.List)):
            names = []
            later: list[tuple[ast.expr, str]] = []
            for element in target.elts:
                starred = isinstance(element, ast.Starred)
                inner = element.value if starred else element
                if plain_target(inner) and not self.context.watched_name(inner):
                    names.append(element)
                    continue
                temp = self._temp()
                stand_in: ast.expr = ast.Name(id=temp, ctx=ast.Store())
                names.append(ast.Starred(value=stand_in, ctx=ast.Store()) if starred else stand_in)
                later.append((inner, temp))
            unpack = ast.Assign(targets=[type(target)(elts=names, ctx=ast.Store())], value=hook(UNPACK, value))
            out: list[ast.stmt] = [ast.copy_location(unpack, where)]
            for inner, temp in later:
                out.extend(self._store(inner, load(temp), where))
            return out
        if isinstance(target, ast.Starred):  # pragma: no cover - only inside a tuple, handled above
            return self._store(target.value, value, where)
        return [ast.copy_location(ast.Assign(targets=[target], value=value), where)]

    def _name_store(self, name: str, value: ast.expr, scope: Scope) -> ast.expr:
        """``value``, stored into ``name`` as it resolves from ``scope``: through its hook if it is watched."""
        how, owner = scope.resolve(name)
        if how == "global":
            return hook(GLOBAL_WRITE, value, literal(self.context.module), literal(name))
        if how in ("cell", "local") and owner is not None and owner.watched_cell(name):
            return hook(CELL_WRITE, value, cell(name), literal(name))
        return value

    def aug_assign(self, node: ast.AugAssign) -> ast.AST | list[ast.stmt]:
        context = self.context
        value = self.visit(node.value)
        if not context.in_code() or (isinstance(node.target, ast.Name) and not context.watched_name(node.target)):
            node.value = value
            node.target = self.visit(node.target) if not isinstance(node.target, ast.Name) else node.target
            return node
        op = literal(AUGMENTED[type(node.op)])
        target = node.target
        if isinstance(target, ast.Attribute):
            temp = self._temp()
            obj = ast.NamedExpr(target=ast.Name(id=temp, ctx=ast.Store()), value=self.visit(target.value))
            attr = literal(mangle(target.attr, context.klass))
            new = hook(INPLACE, op, hook(GETATTR, obj, attr), value)
            statement = hook(SETATTR, new, load(temp), attr)
            return ast.copy_location(ast.Expr(value=statement), node)
        if isinstance(target, ast.Subscript) and context.private(target.value):
            target.slice = self.reads.slice(target.slice)
            node.value = value
            return node
        if isinstance(target, ast.Subscript):
            obj_temp, key_temp = self._temp(), self._temp()
            obj = ast.NamedExpr(target=ast.Name(id=obj_temp, ctx=ast.Store()), value=self.visit(target.value))
            key = ast.NamedExpr(target=ast.Name(id=key_temp, ctx=ast.Store()), value=self.reads.slice(target.slice))
            new = hook(INPLACE, op, hook(GETITEM, obj, key), value)
            statement = hook(SETITEM, new, load(obj_temp), load(key_temp))
            return ast.copy_location(ast.Expr(value=statement), node)
        assert isinstance(target, ast.Name)
        current = self.reads.name(ast.copy_location(ast.Name(id=target.id, ctx=ast.Load()), target))
        new = hook(INPLACE, op, current, value)
        stored = self._name_store(target.id, new, context.scope)
        return ast.copy_location(ast.Assign(targets=[ast.Name(id=target.id, ctx=ast.Store())], value=stored), node)

    def delete(self, node: ast.Delete) -> ast.AST | list[ast.stmt]:
        if not self.context.in_code():
            return node
        out: list[ast.stmt] = []
        for target in node.targets:
            out.extend(self._delete(target, node))
        return out

    def _delete(self, target: ast.expr, where: ast.AST) -> list[ast.stmt]:
        if isinstance(target, ast.Attribute):
            statement = hook(DELATTR, self.visit(target.value), literal(mangle(target.attr, self.context.klass)))
            return [ast.copy_location(ast.Expr(value=statement), where)]
        if isinstance(target, ast.Subscript) and self.context.private(target.value):
            target.slice = self.reads.slice(target.slice)
            return [ast.copy_location(ast.Delete(targets=[target]), where)]
        if isinstance(target, ast.Subscript):
            statement = hook(DELITEM, self.visit(target.value), self.reads.slice(target.slice))
            return [ast.copy_location(ast.Expr(value=statement), where)]
        if isinstance(target, (ast.Tuple, ast.List)):
            out: list[ast.stmt] = []
            for element in target.elts:
                out.extend(self._delete(element, where))
            return out
        if isinstance(target, ast.Name):
            how, _owner = self.context.scope.resolve(target.id)
            deletion = ast.copy_location(ast.Delete(targets=[ast.Name(id=target.id, ctx=ast.Del())]), where)
            if how == "global":
                before = ast.Expr(value=hook(GLOBAL_DELETE, literal(self.context.module), literal(target.id)))
                return [ast.copy_location(before, where), deletion]
            return [deletion]
        return [ast.copy_location(ast.Delete(targets=[target]), where)]

    def named_expr(self, node: ast.NamedExpr) -> ast.AST:
        node.value = self.visit(node.value)
        if self.context.in_code() and self.context.watched_name(node.target):
            # a walrus in a comprehension binds in the scope that holds the comprehension
            node.value = self._name_store(node.target.id, node.value, self.context.home())
        return node

    def _temp(self) -> str:
        self.temps += 1
        return f"__rc_t{self.temps}"
