"""Where the memory rewriter stands in a module (``racecheck.control.rewrite``), and what it asks of a name there.

The rewriter walks a module once; its reads (``rewrite_reads``) and its stores (``rewrite_stores``) both need to
know, at each node, which scope it is in (``racecheck.control.scopes``), whether that is a function's own code (only
that is rewritten), which class's private names the code there mangles, and how a name resolves from there: a
local container no other thread can reach, a builtin, a global or closure cell worth watching. That position is one
object, moved by the walk and read by both.
"""

from __future__ import annotations

import ast

from racecheck.control.private_locals import VIEWS
from racecheck.control.scopes import COMPREHENSION, FUNCTION, LAMBDA, ModuleScopes, Scope

__racecheck_engine__ = True


class RewriteContext:
    """The rewriter's position in one module: the scope it is in and the class whose private names it mangles."""

    def __init__(self, scopes: ModuleScopes, module: str) -> None:
        self.scopes = scopes
        self.module = module  # the module's name, as the global hooks name it
        self.scope: Scope = scopes.module
        self.klass: str | None = None  # the class whose private names the current code mangles

    def in_code(self) -> bool:
        """Inside a function's own code (a def, lambda or a comprehension in one): rewritten."""
        scope: Scope | None = self.scope
        while scope is not None and scope.kind == COMPREHENSION:
            scope = scope.parent
        return scope is not None and scope.kind in (FUNCTION, LAMBDA)

    def enter(self, node: ast.AST) -> tuple[Scope, str | None]:
        """Step into the scope ``node`` opens; what ``leave`` takes to step back out."""
        saved = self.scope, self.klass
        self.scope = self.scopes.scope_of(node)
        return saved

    def leave(self, saved: tuple[Scope, str | None]) -> None:
        self.scope, self.klass = saved

    def home(self) -> Scope:
        """The scope a walrus binds in: the current one, or, inside comprehensions, the one that holds them."""
        home = self.scope
        while home.kind == COMPREHENSION and home.parent is not None:
            home = home.parent
        return home

    def private(self, node: ast.AST) -> bool:
        """A local container only this call of the function can reach (``private_locals``): no hook."""
        if not isinstance(node, ast.Name):
            return False
        how, owner = self.scope.resolve(node.id)
        return how in ("local", "cell") and owner is not None and node.id in self.scopes.private(owner)

    def private_view(self, node: ast.AST) -> bool:
        """``d.keys()``, ``d.values()``, ``d.items()`` of a private container: iterating one reads only it. (Not any
        method's result: ``private.pop()`` may hand back a container other threads share.)"""
        return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and self.private(node.func.value)
                and node.func.attr in VIEWS)

    def builtin_named(self, func: ast.AST, names: frozenset[str]) -> bool:
        """``func`` is a bare name in ``names`` that can only be the builtin of that name here."""
        return (isinstance(func, ast.Name) and func.id in names and self.scope.resolve(func.id)[0] == "global"
                and self.scopes.builtin(func.id))

    def watched_name(self, target: ast.expr) -> bool:
        """A name whose binding another thread could see: a global, or a closure cell worth watching."""
        if not isinstance(target, ast.Name):
            return False
        how, owner = self.scope.resolve(target.id)
        if how == "global":
            return True
        return how in ("cell", "local") and owner is not None and owner.watched_cell(target.id)
