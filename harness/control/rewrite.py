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

from racecheck.control.rewrite_context import RewriteContext
from racecheck.control.rewrite_reads import Reads
from racecheck.control.rewrite_stores import Stores
from racecheck.control.scopes import ModuleScopes

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
    Rewriter(scopes, module).rewrite(tree)
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


class Rewriter(ast.NodeTransformer):
    """Walks the function bodies of one module (scopes from ``ModuleScopes``): it keeps ``context`` at the scope each
    node is in, rewrites statement lists (where one statement may become several), and hands each node to the part
    that rewrites it: ``reads`` (``rewrite_reads``) for expressions, ``stores`` (``rewrite_stores``) for the
    statements that bind or delete; any other node has its children rewritten."""

    def __init__(self, scopes: ModuleScopes, module: str) -> None:
        self.context = RewriteContext(scopes, module)
        self.reads = Reads(self.context, self.visit)
        self.stores = Stores(self.context, self.reads, self.visit, self.statements)

    def rewrite(self, tree: ast.Module) -> None:
        """Rewrite ``tree`` in place, once. The parts call back into the walk, a reference cycle: it is broken here,
        so that the scopes (and through them the tree) go with their last user, not at a later full collection
        (left to the collector, rewriting Lightning's modules kept some 20,000 objects more alive, 5 MB, and took
        some 10% longer)."""
        try:
            self.visit(tree)
        finally:
            del self.reads, self.stores

    def statements(self, body: list[ast.stmt]) -> list[ast.stmt]:
        """``body`` rewritten: a statement may become several (a store through hooks) or none."""
        out: list[ast.stmt] = []
        for stmt in body:
            result = self.visit(stmt)
            if isinstance(result, list):
                out.extend(result)
            elif result is not None:
                out.append(result)
        return out

    def generic_visit(self, node: ast.AST) -> ast.AST:
        # statement lists are visited through statements so that a statement may become several
        for field_name, old in ast.iter_fields(node):
            if isinstance(old, list) and old and isinstance(old[0], ast.stmt):
                setattr(node, field_name, self.statements(old))
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

    # ----- scopes -----------------------------------------------------------------------------------------------

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        return self._function(node)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> ast.AST:
        return self._function(node)

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.AST:
        # decorators and defaults run in the enclosing scope
        node.decorator_list = [self.visit(d) for d in node.decorator_list]
        node.args.defaults = [self.visit(d) for d in node.args.defaults]
        node.args.kw_defaults = [None if d is None else self.visit(d) for d in node.args.kw_defaults]
        saved = self.context.enter(node)
        node.body = self.statements(node.body)
        self.context.leave(saved)
        return node

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        node.decorator_list = [self.visit(d) for d in node.decorator_list]
        node.bases = [self.visit(b) for b in node.bases]
        for keyword in node.keywords:
            keyword.value = self.visit(keyword.value)
        saved = self.context.enter(node)
        self.context.klass = node.name
        node.body = self.statements(node.body)
        self.context.leave(saved)
        return node

    def visit_Lambda(self, node: ast.Lambda) -> ast.AST:
        node.args.defaults = [self.visit(d) for d in node.args.defaults]
        node.args.kw_defaults = [None if d is None else self.visit(d) for d in node.args.kw_defaults]
        saved = self.context.enter(node)
        node.body = self.visit(node.body)
        self.context.leave(saved)
        return node

    def _comprehension(self, node: ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp) -> ast.AST:
        reads = self.reads
        generators = node.generators
        first = generators[0]
        first.iter = reads.iterated(self.visit(first.iter))
        saved = self.context.enter(node)
        for number, gen in enumerate(generators):
            if number:
                gen.iter = reads.iterated(self.visit(gen.iter))
            gen.ifs = [reads.truth(self.visit(test)) for test in gen.ifs]
        if isinstance(node, ast.DictComp):
            node.key = self.visit(node.key)
            node.value = self.visit(node.value)
        else:
            node.elt = self.visit(node.elt)
        self.context.leave(saved)
        return node

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _comprehension

    # ----- tests: a truth test of the condition, then the bodies ------------------------------------------------

    def visit_If(self, node: ast.If) -> ast.AST:
        node.test = self.reads.truth(self.visit(node.test))
        node.body = self.statements(node.body)
        node.orelse = self.statements(node.orelse)
        return node

    def visit_While(self, node: ast.While) -> ast.AST:
        node.test = self.reads.truth(self.visit(node.test))
        node.body = self.statements(node.body)
        node.orelse = self.statements(node.orelse)
        return node

    def visit_Assert(self, node: ast.Assert) -> ast.AST:
        node.test = self.reads.truth(self.visit(node.test))
        if node.msg is not None:
            node.msg = self.visit(node.msg)
        return node

    def visit_match_case(self, node: ast.AST) -> ast.AST:
        # a pattern is not an expression: its dotted names and literals stay as they are
        guard = getattr(node, "guard", None)
        if guard is not None:
            node.guard = self.reads.truth(self.visit(guard))  # type: ignore[attr-defined]
        node.body = self.statements(node.body)  # type: ignore[attr-defined]
        return node

    # ----- reads (rewrite_reads) ---------------------------------------------------------------------------------

    def visit_Name(self, node: ast.Name) -> ast.AST:
        return self.reads.name(node)

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        return self.reads.attribute(node)

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        return self.reads.subscript(node)

    def visit_Call(self, node: ast.Call) -> ast.AST:
        return self.reads.call(node)

    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        return self.reads.compare(node)

    def visit_BoolOp(self, node: ast.BoolOp) -> ast.AST:
        return self.reads.bool_op(node)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.AST:
        return self.reads.unary_op(node)

    def visit_IfExp(self, node: ast.IfExp) -> ast.AST:
        return self.reads.if_exp(node)

    def visit_Starred(self, node: ast.Starred) -> ast.AST:
        return self.reads.starred(node)

    def visit_Dict(self, node: ast.Dict) -> ast.AST:
        return self.reads.dict_display(node)

    # ----- stores (rewrite_stores) -------------------------------------------------------------------------------

    def visit_For(self, node: ast.For) -> ast.AST | list[ast.stmt]:
        return self.stores.for_loop(node)

    def visit_AsyncFor(self, node: ast.AsyncFor) -> ast.AST | list[ast.stmt]:
        return self.stores.for_loop(node)

    def visit_With(self, node: ast.With) -> ast.AST:
        return self.stores.with_block(node)

    def visit_AsyncWith(self, node: ast.AsyncWith) -> ast.AST:
        return self.stores.with_block(node)

    def visit_Assign(self, node: ast.Assign) -> ast.AST | list[ast.stmt]:
        return self.stores.assign(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.AST | list[ast.stmt]:
        return self.stores.ann_assign(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.AST | list[ast.stmt]:
        return self.stores.aug_assign(node)

    def visit_Delete(self, node: ast.Delete) -> ast.AST | list[ast.stmt]:
        return self.stores.delete(node)

    def visit_NamedExpr(self, node: ast.NamedExpr) -> ast.AST:
        return self.stores.named_expr(node)
