"""The memory rewriter: a module's functions, rewritten so that every access to state another thread could see goes
through a hook that records it (and offers a scheduling point) right before it happens.

pytest rewrites ``assert`` statements in the syntax tree before compiling a test module; racecheck rewrites, the
same way, the reads and writes of a function's code: attributes, items, container methods and the builtins that
read containers, iteration, membership, truth tests of containers, the module globals some function rebinds, and
the closure cells a nested function shares. Each becomes a call of a hook (``racecheck.control.memory_hooks``,
reached through names put in ``builtins``: ``__rc_ga__`` and its kin) that, inside a controlled run, records the
access on the step about to perform it and lets the scheduler switch threads before it; outside a run it only does
the access. Locals, constants and code that no other thread can reach are left as they were.

Evaluation order is the language's own: a hook takes its operands in the order Python evaluates them (the value
of ``obj.attr = value`` first, then ``obj``), and it performs the access itself, so what was evaluated before the
hook and what after are as in the original. Calls are not wrapped (an extra frame between a caller and its callee
would change what ``warnings.warn(stacklevel=...)``, ``logging`` and ``sys._getframe`` see): only the callee
expression passes through ``__rc_fn__``, which returns it unchanged (after bringing its module under watch, and,
for the builtins and container methods that read or change a container, as a wrapper that records that on the
call). Names that look at the caller's frame (``super``, ``locals``, ``vars``, ``globals``, ``dir``, ``eval``,
``exec``) are never wrapped.

Only function bodies are rewritten: a module's top level and its class bodies run when it is imported, which is
never inside a run (``racecheck.control.autocontrol``).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass

from racecheck.control.private_locals import KEEPING_METHODS, READING_BUILTINS, VIEWS
from racecheck.control.rewrite_nodes import (
    CALLEE,
    CELL_MARK,
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
    hook,
    literal,
    load,
    mangle,
)
from racecheck.control.rewrite_stores import StoreRewriting
from racecheck.control.scopes import COMPREHENSION, FUNCTION, LAMBDA, ModuleScopes, Scope

__racecheck_engine__ = True

@dataclass(frozen=True)
class Rewritten:
    """A module's rewritten tree, and what the hooks need to know of it."""

    tree: ast.Module
    rebound: frozenset[str]  # the module's globals that some function rebinds


def rewrite_module(source: str, filename: str, module: str,
                   prepare: Callable[[ast.Module], None] | None = None) -> Rewritten:
    """Parse ``source`` and rewrite every function body in it (``SyntaxError`` if it does not parse); ``prepare``
    first rewrites the tree as the module's own import did (pytest's assertion rewriting, for a test module)."""
    tree = ast.parse(source, filename)
    if prepare is not None:
        prepare(tree)
    scopes = ModuleScopes(tree)
    Rewriter(scopes, module).visit(tree)
    ast.fix_missing_locations(tree)
    _consistent_locations(tree)
    return Rewritten(tree, frozenset(scopes.rebound))


def _consistent_locations(tree: ast.Module) -> None:
    """Every node's end at or after its start, as ``compile`` requires: a node built by another rewriter (pytest's
    assertion rewriting gives its nodes a line and no end) can otherwise lend a start after its end to the nodes
    copied from it."""
    for node in ast.walk(tree):
        start = getattr(node, "lineno", None)
        if start is None:
            continue
        end = getattr(node, "end_lineno", None)
        if end is None or end < start:
            node.end_lineno = start
            node.end_col_offset = max(getattr(node, "end_col_offset", 0) or 0, node.col_offset)
        elif end == start and (node.end_col_offset or 0) < node.col_offset:
            node.end_col_offset = node.col_offset


class Rewriter(StoreRewriting, ast.NodeTransformer):
    """Rewrites the function bodies of one module (scopes from ``ModuleScopes``)."""

    def __init__(self, scopes: ModuleScopes, module: str) -> None:
        self.scopes = scopes
        self.module = module
        self.scope: Scope = scopes.module
        self.klass: str | None = None  # the class whose private names the current code mangles
        self.temps = 0
        self.plain_results: set[int] = set()  # calls (by id) whose result is never a container (no truth hook)

    # ----- scopes -----------------------------------------------------------------------------------------------

    def _in_code(self) -> bool:
        """Inside a function's own code (a def, lambda or a comprehension in one): rewritten."""
        scope: Scope | None = self.scope
        while scope is not None and scope.kind == COMPREHENSION:
            scope = scope.parent
        return scope is not None and scope.kind in (FUNCTION, LAMBDA)

    def _enter(self, node: ast.AST) -> tuple[Scope, str | None]:
        saved = self.scope, self.klass
        self.scope = self.scopes.scope_of(node)
        return saved

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        return self._function(node)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> ast.AST:
        return self._function(node)

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.AST:
        # decorators and defaults run in the enclosing scope
        node.decorator_list = [self.visit(d) for d in node.decorator_list]
        node.args.defaults = [self.visit(d) for d in node.args.defaults]
        node.args.kw_defaults = [None if d is None else self.visit(d) for d in node.args.kw_defaults]
        saved = self._enter(node)
        node.body = self._statements(node.body)
        self.scope, self.klass = saved
        return node

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        node.decorator_list = [self.visit(d) for d in node.decorator_list]
        node.bases = [self.visit(b) for b in node.bases]
        for keyword in node.keywords:
            keyword.value = self.visit(keyword.value)
        saved = self._enter(node)
        self.klass = node.name
        node.body = self._statements(node.body)
        self.scope, self.klass = saved
        return node

    def visit_Lambda(self, node: ast.Lambda) -> ast.AST:
        node.args.defaults = [self.visit(d) for d in node.args.defaults]
        node.args.kw_defaults = [None if d is None else self.visit(d) for d in node.args.kw_defaults]
        saved = self.scope
        self.scope = self.scopes.scope_of(node)
        node.body = self.visit(node.body)
        self.scope = saved
        return node

    def _comprehension(self, node: ast.AST) -> ast.AST:
        generators = node.generators  # type: ignore[attr-defined]
        first = generators[0]
        first.iter = self._iterated(self.visit(first.iter))
        saved = self.scope
        self.scope = self.scopes.scope_of(node)
        for number, gen in enumerate(generators):
            if number:
                gen.iter = self._iterated(self.visit(gen.iter))
            gen.ifs = [self._truth(self.visit(test)) for test in gen.ifs]
        if isinstance(node, ast.DictComp):
            node.key = self.visit(node.key)
            node.value = self.visit(node.value)
        else:
            node.elt = self.visit(node.elt)  # type: ignore[attr-defined]
        self.scope = saved
        return node

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _comprehension

    def _statements(self, body: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for stmt in body:
            result = self.visit(stmt)
            if isinstance(result, list):
                out.extend(result)
            elif result is not None:
                out.append(result)
        return out

    def generic_visit(self, node: ast.AST) -> ast.AST:
        # statement lists are visited through _statements so that a statement may become several
        for field_name, old in ast.iter_fields(node):
            if isinstance(old, list) and old and isinstance(old[0], ast.stmt):
                setattr(node, field_name, self._statements(old))
            elif isinstance(old, list):
                new = []
                for item in old:
                    if isinstance(item, ast.AST):
                        item = self.visit(item)
                        if item is None:
                            continue
                    new.append(item)
                setattr(node, field_name, new)
            elif isinstance(old, ast.AST):
                setattr(node, field_name, self.visit(old))
        return node

    def _private(self, node: ast.AST) -> bool:
        """A local container only this call of the function can reach (``private_locals``): no hook."""
        if not isinstance(node, ast.Name):
            return False
        how, owner = self.scope.resolve(node.id)
        return how in ("local", "cell") and owner is not None and node.id in self.scopes.private(owner)

    def _private_view(self, node: ast.AST) -> bool:
        """``d.keys()``, ``d.values()``, ``d.items()`` of a private container: iterating one reads only it. (Not any
        method's result: ``private.pop()`` may hand back a container other threads share.)"""
        return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and self._private(node.func.value)
                and node.func.attr in VIEWS)

    # ----- reads ------------------------------------------------------------------------------------------------

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if not self._in_code() or not isinstance(node.ctx, ast.Load):
            return node
        how, owner = self.scope.resolve(node.id)
        if how == "global" and node.id in self.scopes.rebound:
            reader = hook(GLOBAL_READ, literal(self.module), literal(node.id))
        elif how in ("cell", "local") and owner is not None and owner.watched_cell(node.id):
            reader = hook(CELL_READ, self._cell(node.id), literal(node.id))
        else:
            return node
        return ast.copy_location(ast.BoolOp(op=ast.Or(), values=[reader, node]), node)

    def _cell(self, name: str) -> ast.Lambda:
        """``lambda __rc_cell=None: name``: its closure holds the cell itself, which names the variable in a run."""
        args = ast.arguments(posonlyargs=[], args=[ast.arg(arg=CELL_MARK)], vararg=None, kwonlyargs=[],
                             kw_defaults=[], kwarg=None, defaults=[literal(None)])
        return ast.Lambda(args=args, body=load(name))

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        node.value = self.visit(node.value)
        if not self._in_code() or not isinstance(node.ctx, ast.Load):
            return node
        return ast.copy_location(hook(GETATTR, node.value, literal(mangle(node.attr, self.klass))), node)

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        node.value = self.visit(node.value)
        node.slice = self._slice(node.slice)
        if not self._in_code() or not isinstance(node.ctx, ast.Load) or self._private(node.value):
            return node
        return ast.copy_location(hook(GETITEM, node.value, node.slice), node)

    def _slice(self, node: ast.AST) -> ast.expr:
        """A subscript's index as a value: ``a:b`` is ``slice(a, b)`` once it leaves the subscript."""
        if isinstance(node, ast.Slice):
            parts = [self.visit(p) if p is not None else literal(None) for p in (node.lower, node.upper, node.step)]
            return ast.copy_location(hook(SLICE, *parts), node)
        if isinstance(node, ast.Tuple) and any(isinstance(e, ast.Slice) for e in node.elts):
            node.elts = [self._slice(e) for e in node.elts]
            return node
        if type(node).__name__ == "Index":  # pragma: no cover - 3.8's wrapper, kept for safety
            return self.visit(node.value)  # type: ignore[attr-defined]
        return self.visit(node)

    def _builtin_named(self, func: ast.AST, names: frozenset[str]) -> bool:
        """``func`` is a bare name in ``names`` that can only be the builtin of that name here."""
        return (isinstance(func, ast.Name) and func.id in names and self.scope.resolve(func.id)[0] == "global"
                and self.scopes.builtin(func.id))

    def visit_Call(self, node: ast.Call) -> ast.AST:
        func = node.func
        if self._builtin_named(func, PLAIN_RESULT_BUILTINS):
            self.plain_results.add(id(node))
        sensitive = isinstance(func, ast.Name) and func.id in FRAME_SENSITIVE
        method = isinstance(func, ast.Attribute) and self._in_code()
        if method:
            assert isinstance(func, ast.Attribute)
            func.value = self.visit(func.value)
        else:
            node.func = self.visit(func)
        node.args = [self.visit(a) for a in node.args]
        for keyword in node.keywords:
            keyword.value = self.visit(keyword.value)
            if keyword.arg is None and self._in_code() and not self._private(keyword.value):
                keyword.value = hook(UNPACK, keyword.value)
        if method:
            assert isinstance(func, ast.Attribute)
            if not (self._private(func.value) and func.attr in KEEPING_METHODS):
                node.func = ast.copy_location(hook(METHOD, func.value, literal(mangle(func.attr, self.klass))), func)
        elif (isinstance(func, ast.Name) and func.id in READING_BUILTINS and node.args and not node.keywords
              and all(self._private(a) for a in node.args)):
            pass  # ``len(private)``: reads only what no other thread can reach
        elif self._in_code() and not sensitive and not self._builtin_named(func, INERT_BUILTINS):
            node.func = ast.copy_location(hook(CALLEE, node.func), func)
        return node

    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        node.left = self.visit(node.left)
        node.comparators = [self.visit(c) for c in node.comparators]
        if not self._in_code() or len(node.ops) != 1 or not isinstance(node.ops[0], (ast.In, ast.NotIn)):
            return node
        if self._private(node.comparators[0]):
            return node
        test = ast.copy_location(hook(CONTAINS, node.left, node.comparators[0]), node)
        if isinstance(node.ops[0], ast.NotIn):
            return ast.copy_location(ast.UnaryOp(op=ast.Not(), operand=test), node)
        return test

    def visit_BoolOp(self, node: ast.BoolOp) -> ast.AST:
        node.values = [self._truth(self.visit(v)) for v in node.values]
        return node

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.AST:
        node.operand = self.visit(node.operand)
        if isinstance(node.op, ast.Not):
            node.operand = self._truth(node.operand)
        return node

    def visit_IfExp(self, node: ast.IfExp) -> ast.AST:
        node.test = self._truth(self.visit(node.test))
        node.body = self.visit(node.body)
        node.orelse = self.visit(node.orelse)
        return node

    def visit_Starred(self, node: ast.Starred) -> ast.AST:
        node.value = self.visit(node.value)
        if self._in_code() and isinstance(node.ctx, ast.Load) and not self._private(node.value):
            node.value = hook(UNPACK, node.value)
        return node

    def visit_Dict(self, node: ast.Dict) -> ast.AST:
        node.keys = [None if k is None else self.visit(k) for k in node.keys]
        node.values = [self.visit(v) for v in node.values]
        if self._in_code():
            node.values = [hook(UNPACK, v) if k is None and not self._private(v) else v
                           for k, v in zip(node.keys, node.values, strict=True)]
        return node

    def _truth(self, node: ast.expr) -> ast.expr:
        """A value whose truth is tested: a container's truth is its length, a read of it."""
        if not self._in_code() or not isinstance(node, (ast.Name, ast.Attribute, ast.Subscript, ast.Call)):
            return node
        if self._private(node) or id(node) in self.plain_results:
            return node
        return ast.copy_location(hook(TRUTH, node), node)

    def _iterated(self, node: ast.expr) -> ast.expr:
        if not self._in_code() or self._private(node) or self._private_view(node):
            return node
        return ast.copy_location(hook(ITERATE, node), node)

    # ----- statements -------------------------------------------------------------------------------------------

    def visit_If(self, node: ast.If) -> ast.AST:
        node.test = self._truth(self.visit(node.test))
        node.body = self._statements(node.body)
        node.orelse = self._statements(node.orelse)
        return node

    def visit_While(self, node: ast.While) -> ast.AST:
        node.test = self._truth(self.visit(node.test))
        node.body = self._statements(node.body)
        node.orelse = self._statements(node.orelse)
        return node

    def visit_Assert(self, node: ast.Assert) -> ast.AST:
        node.test = self._truth(self.visit(node.test))
        if node.msg is not None:
            node.msg = self.visit(node.msg)
        return node

    def visit_match_case(self, node: ast.AST) -> ast.AST:
        # a pattern is not an expression: its dotted names and literals stay as they are
        guard = getattr(node, "guard", None)
        if guard is not None:
            node.guard = self._truth(self.visit(guard))  # type: ignore[attr-defined]
        node.body = self._statements(node.body)  # type: ignore[attr-defined]
        return node
