"""Where each name of a module's functions lives (local, a closure cell, a module global), read from the syntax tree.

The memory rewriter (``racecheck.control.rewrite``) must know, for every name a function reads or writes, whether
another thread could see it: a local variable never, a module global or a closure cell maybe. CPython's own
``symtable`` answers this, but differently from one version to the next (3.12 inlines comprehensions into their
function's table), so the rule is restated here once, from the language reference, for 3.10-3.13 alike:

* a name bound in a function (assigned, a parameter, a ``for``/``with``/``except``/``import``/``def``/``class``
  target, deleted, a walrus target, a ``match`` capture) is local to it, unless declared ``global`` or
  ``nonlocal`` there;
* a comprehension's targets are local to the comprehension; a walrus inside one binds in the nearest enclosing
  function;
* any other name resolves outward through the enclosing functions (class bodies are skipped): bound in one of them,
  it is a closure cell of that function; bound in none, it is a module global (or a builtin).

Which cells and globals are worth watching is decided here too (``Scope.watched_cell``, ``ModuleScopes.rebound``):
only state that can change while threads run. A module global that no function rebinds (``global x``) holds what
the module's import put there; a cell written once, at the top of its function and before any closure exists, holds
the same value for every thread that reads it.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from racecheck.control.private_locals import private_containers

__racecheck_engine__ = True

FUNCTION, LAMBDA, COMPREHENSION, CLASS, MODULE = "function", "lambda", "comprehension", "class", "module"
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)


@dataclass(eq=False)
class Scope:
    """One scope of a module: what it binds, declares and captures."""

    kind: str
    node: ast.AST | None
    parent: Scope | None
    bound: set[str] = field(default_factory=set)
    declared_global: set[str] = field(default_factory=set)
    declared_nonlocal: set[str] = field(default_factory=set)
    # name -> how many times the scope binds it (a binding inside a loop counts twice: it runs again)
    bindings: dict[str, int] = field(default_factory=dict)
    captured: set[str] = field(default_factory=set)  # locals a nested def or lambda reads or writes
    written_from_inside: set[str] = field(default_factory=set)  # locals a nested scope assigns (nonlocal)
    private: frozenset[str] | None = None  # ModuleScopes.private, once asked

    @property
    def is_function(self) -> bool:
        return self.kind in (FUNCTION, LAMBDA)

    def local(self, name: str) -> bool:
        return name in self.bound and name not in self.declared_global and name not in self.declared_nonlocal

    def resolve(self, name: str) -> tuple[str, Scope | None]:
        """("local", self), ("cell", the function that owns it) or ("global", None)."""
        if name in self.declared_global:
            return "global", None
        if self.kind != CLASS and self.local(name):
            return "local", self
        scope = self.parent
        while scope is not None:
            if scope.kind == MODULE:
                return "global", None
            if scope.kind != CLASS:
                if name in scope.declared_global:
                    return "global", None
                if scope.local(name):
                    return ("cell", scope) if scope.kind != COMPREHENSION else ("local", scope)
            scope = scope.parent
        return "global", None

    def watched_cell(self, name: str) -> bool:
        """A local of this function that a closure may read while another thread changes it: some nested def or
        lambda uses it, and it is written again after the first binding (a second binding, one in a loop, or a
        nonlocal assignment from inside)."""
        if name not in self.captured:
            return False
        return name in self.written_from_inside or self.bindings.get(name, 0) > 1


class ModuleScopes:
    """Every scope of one module's tree, by node, with the module's rebound globals."""

    def __init__(self, tree: ast.Module) -> None:
        self.by_node: dict[ast.AST, Scope] = {}
        self.module = Scope(MODULE, tree, None)
        self.by_node[tree] = self.module
        # Globals some function rebinds (``global x`` then an assignment or ``del``): only these can change while
        # threads run; the others hold what the module's import bound.
        self.rebound: set[str] = set()
        self.star_import = any(isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names)
                               for node in ast.walk(tree))
        _Binder(self).visit_body(tree.body, self.module, loop=False)
        self._capture(self.module)

    def scope_of(self, node: ast.AST) -> Scope:
        return self.by_node[node]

    def private(self, scope: Scope) -> frozenset[str]:
        """The locals of a function that only ever hold a container it built and never lets go
        (``racecheck.control.private_locals``): their accesses need no record."""
        if scope.private is None:
            scope.private = frozenset()
            if scope.kind == FUNCTION and isinstance(scope.node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                args = scope.node.args
                parameters = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg,
                                               args.kwarg] if a is not None}
                candidates = {name for name in scope.bound if scope.local(name) and name not in scope.captured
                              and name not in scope.written_from_inside and name not in parameters}
                scope.private = private_containers(
                    scope.node, candidates, lambda name: scope.resolve(name)[0] == "global" and self.builtin(name))
        return scope.private

    def builtin(self, name: str) -> bool:
        """Whether a function's unbound name is the builtin of that name: the module neither binds it nor may."""
        return not self.star_import and name not in self.module.bound and name not in self.rebound

    def _capture(self, scope: Scope) -> None:
        """Mark, in every function, the locals that nested defs and lambdas use (``Scope.captured``)."""
        for node, inner in self.by_node.items():
            if inner.kind not in (FUNCTION, LAMBDA, COMPREHENSION):
                continue
            for name in _names_used(node, inner):
                how, owner = inner.resolve(name)
                if how == "cell" and owner is not None and owner is not inner:
                    if _through_a_function(inner, owner):
                        owner.captured.add(name)
            for name in inner.declared_nonlocal:
                how, owner = _outer(inner, name)
                if owner is not None:
                    owner.captured.add(name)
                    owner.written_from_inside.add(name)


def _through_a_function(inner: Scope, owner: Scope) -> bool:
    """Whether a def or lambda lies between ``inner`` (inclusive) and ``owner``: a comprehension alone runs on the
    owner's own thread, at once."""
    scope: Scope | None = inner
    while scope is not None and scope is not owner:
        if scope.kind in (FUNCTION, LAMBDA):
            return True
        scope = scope.parent
    return False


def _outer(scope: Scope, name: str) -> tuple[str, Scope | None]:
    parent = scope.parent
    while parent is not None and parent.kind != MODULE:
        if parent.kind != CLASS and parent.local(name):
            return "cell", parent
        parent = parent.parent
    return "global", None


def _names_used(node: ast.AST, scope: Scope) -> set[str]:
    """The names a scope's own code reads or writes (not those of scopes nested in it)."""
    found: set[str] = set()
    for child in _own_nodes(node):
        if isinstance(child, ast.Name):
            found.add(child.id)
    return found


def _own_nodes(node: ast.AST):
    """The nodes of a scope's own code: its body, not the bodies of the scopes nested in it (their defaults,
    decorators and a comprehension's first iterable belong to the enclosing scope)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        pending: list[ast.AST] = list(node.body)
    elif isinstance(node, ast.Lambda):
        pending = [node.body]
    elif isinstance(node, _COMPREHENSIONS):
        pending = [node.elt] if not isinstance(node, ast.DictComp) else [node.key, node.value]
        for number, gen in enumerate(node.generators):
            pending.append(gen.target)
            if number:
                pending.append(gen.iter)
            pending.extend(gen.ifs)
    else:
        pending = list(ast.iter_child_nodes(node))
    while pending:
        child = pending.pop()
        yield child
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
            pending.extend(child.decorator_list)
            pending.extend(_defaults(child.args))
            continue
        if isinstance(child, ast.Lambda):
            pending.extend(_defaults(child.args))
            continue
        if isinstance(child, ast.ClassDef):
            pending.extend(child.decorator_list)
            pending.extend(child.bases)
            pending.extend(k.value for k in child.keywords)
            continue
        if isinstance(child, _COMPREHENSIONS):
            pending.append(child.generators[0].iter)
            continue
        pending.extend(ast.iter_child_nodes(child))


def _defaults(args: ast.arguments) -> list[ast.AST]:
    return [*args.defaults, *(d for d in args.kw_defaults if d is not None)]


class _Binder:
    """Builds the scopes: what each binds and declares, and how often (``Scope.bindings``)."""

    def __init__(self, owner: ModuleScopes) -> None:
        self.owner = owner

    def new(self, kind: str, node: ast.AST, parent: Scope) -> Scope:
        scope = Scope(kind, node, parent)
        self.owner.by_node[node] = scope
        return scope

    def bind(self, scope: Scope, name: str, loop: bool) -> None:
        scope.bound.add(name)
        scope.bindings[name] = scope.bindings.get(name, 0) + (2 if loop else 1)
        if name in scope.declared_global and scope.kind != MODULE:
            self.owner.rebound.add(name)

    def visit_body(self, body: list[ast.stmt], scope: Scope, loop: bool) -> None:
        for stmt in body:
            self.stmt(stmt, scope, loop)

    def stmt(self, node: ast.stmt, scope: Scope, loop: bool) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for expr in [*node.decorator_list, *_defaults(node.args), *_annotations(node)]:
                self.expr(expr, scope, loop)
            self.bind(scope, node.name, loop)
            inner = self.new(FUNCTION, node, scope)
            self.arguments(node.args, inner)
            self.visit_body(node.body, inner, loop=False)
            return
        if isinstance(node, ast.ClassDef):
            for expr in [*node.decorator_list, *node.bases, *(k.value for k in node.keywords)]:
                self.expr(expr, scope, loop)
            self.bind(scope, node.name, loop)
            inner = self.new(CLASS, node, scope)
            self.visit_body(node.body, inner, loop=False)
            return
        if isinstance(node, ast.Global):
            scope.declared_global.update(node.names)
            return
        if isinstance(node, ast.Nonlocal):
            scope.declared_nonlocal.update(node.names)
            return
        in_loop = loop or isinstance(node, _LOOPS)
        if isinstance(node, (ast.For, ast.AsyncFor)):
            self.expr(node.iter, scope, loop)
            self.target(node.target, scope, True)
            self.visit_body(node.body, scope, True)
            self.visit_body(node.orelse, scope, loop)
            return
        if isinstance(node, ast.While):
            self.expr(node.test, scope, True)
            self.visit_body(node.body, scope, True)
            self.visit_body(node.orelse, scope, loop)
            return
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name != "*":
                    self.bind(scope, (alias.asname or alias.name).partition(".")[0], loop)
            return
        if isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
            self.visit_body(node.body, scope, loop)
            for handler in node.handlers:
                if handler.type is not None:
                    self.expr(handler.type, scope, loop)
                if handler.name:
                    self.bind(scope, handler.name, loop)
                self.visit_body(handler.body, scope, loop)
            self.visit_body(node.orelse, scope, loop)
            self.visit_body(node.finalbody, scope, loop)
            return
        if isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                self.expr(item.context_expr, scope, loop)
                if item.optional_vars is not None:
                    self.target(item.optional_vars, scope, loop)
            self.visit_body(node.body, scope, loop)
            return
        if isinstance(node, ast.If):
            self.expr(node.test, scope, loop)
            self.visit_body(node.body, scope, loop)
            self.visit_body(node.orelse, scope, loop)
            return
        if type(node).__name__ == "Match":
            self.expr(node.subject, scope, loop)  # type: ignore[attr-defined]
            for case in node.cases:  # type: ignore[attr-defined]
                for sub in ast.walk(case.pattern):
                    name = getattr(sub, "name", None) or getattr(sub, "rest", None)
                    if isinstance(name, str):
                        self.bind(scope, name, loop)
                    for child in ast.iter_child_nodes(sub):
                        if isinstance(child, ast.expr):
                            self.expr(child, scope, loop)
                if case.guard is not None:
                    self.expr(case.guard, scope, loop)
                self.visit_body(case.body, scope, loop)
            return
        if isinstance(node, ast.Assign):
            self.expr(node.value, scope, loop)
            for target in node.targets:
                self.target(target, scope, in_loop)
            return
        if isinstance(node, ast.AugAssign):
            self.expr(node.value, scope, loop)
            self.target(node.target, scope, True)  # reads and writes again: a change after the first binding
            return
        if isinstance(node, ast.AnnAssign):
            if node.value is not None:
                self.expr(node.value, scope, loop)
            if isinstance(node.target, ast.Name):
                if node.value is not None or scope.kind != MODULE:
                    self.bind(scope, node.target.id, loop)
            else:
                self.expr(node.target, scope, loop)
            return
        if isinstance(node, ast.Delete):
            for target in node.targets:
                self.target(target, scope, True)
            return
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self.expr(child, scope, loop)
            elif isinstance(child, ast.stmt):
                self.stmt(child, scope, loop)
            elif isinstance(child, ast.keyword):
                self.expr(child.value, scope, loop)

    def arguments(self, args: ast.arguments, scope: Scope) -> None:
        every = [*args.posonlyargs, *args.args, *args.kwonlyargs]
        if args.vararg is not None:
            every.append(args.vararg)
        if args.kwarg is not None:
            every.append(args.kwarg)
        for arg in every:
            self.bind(scope, arg.arg, loop=False)

    def target(self, node: ast.expr, scope: Scope, loop: bool) -> None:
        if isinstance(node, ast.Name):
            self.bind(scope, node.id, loop)
        elif isinstance(node, (ast.Tuple, ast.List)):
            for element in node.elts:
                self.target(element, scope, loop)
        elif isinstance(node, ast.Starred):
            self.target(node.value, scope, loop)
        else:
            self.expr(node, scope, loop)

    def expr(self, node: ast.expr, scope: Scope, loop: bool) -> None:
        if isinstance(node, ast.Lambda):
            for default in _defaults(node.args):
                self.expr(default, scope, loop)
            inner = self.new(LAMBDA, node, scope)
            self.arguments(node.args, inner)
            self.expr(node.body, inner, loop=False)
            return
        if isinstance(node, _COMPREHENSIONS):
            first = node.generators[0]
            self.expr(first.iter, scope, loop)
            inner = self.new(COMPREHENSION, node, scope)
            for number, gen in enumerate(node.generators):
                if number:
                    self.expr(gen.iter, inner, True)
                self.target(gen.target, inner, True)
                for test in gen.ifs:
                    self.expr(test, inner, True)
            parts = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
            for part in parts:
                self.expr(part, inner, True)
            return
        if isinstance(node, ast.NamedExpr):
            self.expr(node.value, scope, loop)
            home = scope
            while home.kind == COMPREHENSION and home.parent is not None:
                home = home.parent
            self.bind(home, node.target.id, loop or home is not scope)
            return
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self.expr(child, scope, loop)
            elif isinstance(child, ast.keyword):
                self.expr(child.value, scope, loop)


def _annotations(node: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.expr]:
    args = node.args
    found = [a.annotation for a in [*args.posonlyargs, *args.args, *args.kwonlyargs] if a.annotation is not None]
    for extra in (args.vararg, args.kwarg):
        if extra is not None and extra.annotation is not None:
            found.append(extra.annotation)
    if node.returns is not None:
        found.append(node.returns)
    return found
