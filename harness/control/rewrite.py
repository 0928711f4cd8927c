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
from dataclasses import dataclass

from racecheck.control.scopes import COMPREHENSION, FUNCTION, LAMBDA, ModuleScopes, Scope

__racecheck_engine__ = True

# The hooks, as builtins names (``racecheck.control.memory_hooks.install_builtins`` binds them).
GETATTR, SETATTR, DELATTR = "__rc_ga__", "__rc_sa__", "__rc_da__"
GETITEM, SETITEM, DELITEM = "__rc_gi__", "__rc_si__", "__rc_di__"
GLOBAL_READ, GLOBAL_WRITE, GLOBAL_DELETE = "__rc_gg__", "__rc_sg__", "__rc_dg__"
CELL_READ, CELL_WRITE = "__rc_gc__", "__rc_sc__"
CALLEE, METHOD, ITERATE, CONTAINS, TRUTH, UNPACK, INPLACE, SLICE = (
    "__rc_fn__", "__rc_gm__", "__rc_it__", "__rc_in__", "__rc_tr__", "__rc_up__", "__rc_io__", "__rc_sl__",
)
HOOK_NAMES = (
    GETATTR, SETATTR, DELATTR, GETITEM, SETITEM, DELITEM, GLOBAL_READ, GLOBAL_WRITE, GLOBAL_DELETE, CELL_READ,
    CELL_WRITE, CALLEE, METHOD, ITERATE, CONTAINS, TRUTH, UNPACK, INPLACE, SLICE,
)
CELL_MARK = "__rc_cell"  # the parameter of the lambdas that hand a cell to the hooks (never a user's lambda)

# Calls that look at their caller's frame or scope: never given another callee expression.
FRAME_SENSITIVE = frozenset({"super", "locals", "vars", "globals", "dir", "eval", "exec", "breakpoint"})

_OPS = {
    ast.Add: "+=", ast.Sub: "-=", ast.Mult: "*=", ast.MatMult: "@=", ast.Div: "/=", ast.FloorDiv: "//=",
    ast.Mod: "%=", ast.Pow: "**=", ast.LShift: "<<=", ast.RShift: ">>=", ast.BitOr: "|=", ast.BitXor: "^=",
    ast.BitAnd: "&=",
}


@dataclass(frozen=True)
class Rewritten:
    """A module's rewritten tree, and what the hooks need to know of it."""

    tree: ast.Module
    rebound: frozenset[str]  # the module's globals that some function rebinds


def rewrite_module(source: str, filename: str, module: str) -> Rewritten:
    """Parse ``source`` and rewrite every function body in it (``SyntaxError`` if it does not parse)."""
    tree = ast.parse(source, filename)
    scopes = ModuleScopes(tree)
    _Rewriter(scopes, module).visit(tree)
    ast.fix_missing_locations(tree)
    return Rewritten(tree, frozenset(scopes.rebound))


def _name(identifier: str) -> ast.Name:
    return ast.Name(id=identifier, ctx=ast.Load())


def _const(value: object) -> ast.Constant:
    return ast.Constant(value=value)


def _call(hook: str, *args: ast.expr) -> ast.Call:
    return ast.Call(func=_name(hook), args=list(args), keywords=[])


def _mangle(name: str, klass: str | None) -> str:
    """The compiler's private-name mangling, which an attribute turned into a string constant no longer gets."""
    if klass is None or not name.startswith("__") or name.endswith("__") or "." in name:
        return name
    stripped = klass.lstrip("_")
    return f"_{stripped}{name}" if stripped else name


class _Rewriter(ast.NodeTransformer):
    """Rewrites the function bodies of one module (scopes from ``ModuleScopes``)."""

    def __init__(self, scopes: ModuleScopes, module: str) -> None:
        self.scopes = scopes
        self.module = module
        self.scope: Scope = scopes.module
        self.klass: str | None = None  # the class whose private names the current code mangles
        self.temps = 0

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

    # ----- reads ------------------------------------------------------------------------------------------------

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if not self._in_code() or not isinstance(node.ctx, ast.Load):
            return node
        how, owner = self.scope.resolve(node.id)
        if how == "global" and node.id in self.scopes.rebound:
            hook = _call(GLOBAL_READ, _const(self.module), _const(node.id))
        elif how in ("cell", "local") and owner is not None and owner.watched_cell(node.id):
            hook = _call(CELL_READ, self._cell(node.id), _const(node.id))
        else:
            return node
        return ast.copy_location(ast.BoolOp(op=ast.Or(), values=[hook, node]), node)

    def _cell(self, name: str) -> ast.Lambda:
        """``lambda __rc_cell=None: name``: its closure holds the cell itself, which names the variable in a run."""
        args = ast.arguments(posonlyargs=[], args=[ast.arg(arg=CELL_MARK)], vararg=None, kwonlyargs=[],
                             kw_defaults=[], kwarg=None, defaults=[_const(None)])
        return ast.Lambda(args=args, body=_name(name))

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        node.value = self.visit(node.value)
        if not self._in_code() or not isinstance(node.ctx, ast.Load):
            return node
        return ast.copy_location(_call(GETATTR, node.value, _const(_mangle(node.attr, self.klass))), node)

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        node.value = self.visit(node.value)
        node.slice = self._slice(node.slice)
        if not self._in_code() or not isinstance(node.ctx, ast.Load):
            return node
        return ast.copy_location(_call(GETITEM, node.value, node.slice), node)

    def _slice(self, node: ast.AST) -> ast.expr:
        """A subscript's index as a value: ``a:b`` is ``slice(a, b)`` once it leaves the subscript."""
        if isinstance(node, ast.Slice):
            parts = [self.visit(p) if p is not None else _const(None) for p in (node.lower, node.upper, node.step)]
            return ast.copy_location(_call(SLICE, *parts), node)
        if isinstance(node, ast.Tuple) and any(isinstance(e, ast.Slice) for e in node.elts):
            node.elts = [self._slice(e) for e in node.elts]
            return node
        if type(node).__name__ == "Index":  # pragma: no cover - 3.8's wrapper, kept for safety
            return self.visit(node.value)  # type: ignore[attr-defined]
        return self.visit(node)

    def visit_Call(self, node: ast.Call) -> ast.AST:
        func = node.func
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
            if keyword.arg is None and self._in_code():
                keyword.value = _call(UNPACK, keyword.value)
        if method:
            assert isinstance(func, ast.Attribute)
            node.func = ast.copy_location(_call(METHOD, func.value, _const(_mangle(func.attr, self.klass))), func)
        elif self._in_code() and not sensitive:
            node.func = ast.copy_location(_call(CALLEE, node.func), func)
        return node

    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        node.left = self.visit(node.left)
        node.comparators = [self.visit(c) for c in node.comparators]
        if not self._in_code() or len(node.ops) != 1 or not isinstance(node.ops[0], (ast.In, ast.NotIn)):
            return node
        test = ast.copy_location(_call(CONTAINS, node.left, node.comparators[0]), node)
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
        if self._in_code() and isinstance(node.ctx, ast.Load):
            node.value = _call(UNPACK, node.value)
        return node

    def visit_Dict(self, node: ast.Dict) -> ast.AST:
        node.keys = [None if k is None else self.visit(k) for k in node.keys]
        node.values = [self.visit(v) for v in node.values]
        if self._in_code():
            node.values = [_call(UNPACK, v) if k is None else v for k, v in zip(node.keys, node.values, strict=True)]
        return node

    def _truth(self, node: ast.expr) -> ast.expr:
        """A value whose truth is tested: a container's truth is its length, a read of it."""
        if not self._in_code() or not isinstance(node, (ast.Name, ast.Attribute, ast.Subscript, ast.Call)):
            return node
        return ast.copy_location(_call(TRUTH, node), node)

    def _iterated(self, node: ast.expr) -> ast.expr:
        if not self._in_code():
            return node
        return ast.copy_location(_call(ITERATE, node), node)

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

    def _for(self, node: ast.For | ast.AsyncFor) -> ast.AST | list[ast.stmt]:
        node.iter = self.visit(node.iter)
        if self._in_code() and isinstance(node, ast.For):
            node.iter = self._iterated(node.iter)
        node.body = self._statements(node.body)
        node.orelse = self._statements(node.orelse)
        if self._in_code() and not _plain_target(node.target):
            temp = self._temp()
            assign = self._assign([node.target], _name(temp), node)
            node.target = ast.Name(id=temp, ctx=ast.Store())
            node.body = [*assign, *node.body]
        return node

    visit_For = visit_AsyncFor = _for

    def visit_With(self, node: ast.With) -> ast.AST:
        return self._with(node)

    def visit_AsyncWith(self, node: ast.AsyncWith) -> ast.AST:
        return self._with(node)

    def _with(self, node: ast.With | ast.AsyncWith) -> ast.AST:
        extra: list[ast.stmt] = []
        for item in node.items:
            item.context_expr = self.visit(item.context_expr)
            if item.optional_vars is not None and self._in_code() and not _plain_target(item.optional_vars):
                temp = self._temp()
                extra.extend(self._assign([item.optional_vars], _name(temp), node))
                item.optional_vars = ast.Name(id=temp, ctx=ast.Store())
        node.body = [*extra, *self._statements(node.body)]
        return node

    def visit_Assign(self, node: ast.Assign) -> ast.AST | list[ast.stmt]:
        node.value = self.visit(node.value)
        if not self._in_code():
            return node
        if len(node.targets) == 1 and self._simple_store(node.targets[0]):
            return self._assign(node.targets, node.value, node)
        if all(_plain_target(t) and not self._watched_name(t) for t in node.targets):
            node.value = self._unpacked(node.targets, node.value)
            return node
        temp = self._temp()
        first = ast.copy_location(ast.Assign(targets=[ast.Name(id=temp, ctx=ast.Store())], value=node.value), node)
        return [first, *self._assign(node.targets, _name(temp), node)]

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.AST | list[ast.stmt]:
        if node.value is None or not self._in_code():
            if node.value is not None:
                node.value = self.visit(node.value)
            return node
        node.value = self.visit(node.value)
        if isinstance(node.target, ast.Name) and not self._watched_name(node.target):
            return node
        return self._assign([node.target], node.value, node)

    def _unpacked(self, targets: list[ast.expr], value: ast.expr) -> ast.expr:
        """A value unpacked into several names reads it whole (``a, b = pair``)."""
        if any(isinstance(t, (ast.Tuple, ast.List)) for t in targets):
            return ast.copy_location(_call(UNPACK, value), value)
        return value

    def _simple_store(self, target: ast.expr) -> bool:
        return isinstance(target, (ast.Attribute, ast.Subscript)) or self._watched_name(target)

    def _watched_name(self, target: ast.expr) -> bool:
        if not isinstance(target, ast.Name):
            return False
        how, owner = self.scope.resolve(target.id)
        if how == "global":
            return True
        return how in ("cell", "local") and owner is not None and owner.watched_cell(target.id)

    def _assign(self, targets: list[ast.expr], value: ast.expr, where: ast.AST) -> list[ast.stmt]:
        """``t1 = t2 = value`` with each target stored through its hook, in the language's order (the value,
        then each target left to right: its object, then its key, then the store)."""
        out: list[ast.stmt] = []
        if len(targets) > 1 and not isinstance(value, ast.Name):
            temp = self._temp()
            out.append(ast.copy_location(ast.Assign(targets=[ast.Name(id=temp, ctx=ast.Store())], value=value),
                                         where))
            value = _name(temp)
        for target in targets:
            out.extend(self._store(target, value, where))
        return out

    def _store(self, target: ast.expr, value: ast.expr, where: ast.AST) -> list[ast.stmt]:
        if isinstance(target, ast.Attribute):
            obj = self.visit(target.value)
            call = _call(SETATTR, value, obj, _const(_mangle(target.attr, self.klass)))
            return [ast.copy_location(ast.Expr(value=call), where)]
        if isinstance(target, ast.Subscript):
            obj = self.visit(target.value)
            key = self._slice(target.slice)
            return [ast.copy_location(ast.Expr(value=_call(SETITEM, value, obj, key)), where)]
        if isinstance(target, ast.Name):
            stored = self._name_store(target.id, value)
            return [ast.copy_location(ast.Assign(targets=[ast.Name(id=target.id, ctx=ast.Store())],
                                                 value=stored), where)]
        if isinstance(target, (ast.Tuple, ast.List)):
            names = []
            later: list[tuple[ast.expr, str]] = []
            for element in target.elts:
                starred = isinstance(element, ast.Starred)
                inner = element.value if starred else element
                if _plain_target(inner) and not self._watched_name(inner):
                    names.append(element)
                    continue
                temp = self._temp()
                stand_in: ast.expr = ast.Name(id=temp, ctx=ast.Store())
                names.append(ast.Starred(value=stand_in, ctx=ast.Store()) if starred else stand_in)
                later.append((inner, temp))
            unpack = ast.Assign(targets=[type(target)(elts=names, ctx=ast.Store())], value=_call(UNPACK, value))
            out: list[ast.stmt] = [ast.copy_location(unpack, where)]
            for inner, temp in later:
                out.extend(self._store(inner, _name(temp), where))
            return out
        if isinstance(target, ast.Starred):  # pragma: no cover - only inside a tuple, handled above
            return self._store(target.value, value, where)
        return [ast.copy_location(ast.Assign(targets=[target], value=value), where)]

    def _name_store(self, name: str, value: ast.expr) -> ast.expr:
        how, owner = self.scope.resolve(name)
        if how == "global":
            return _call(GLOBAL_WRITE, value, _const(self.module), _const(name))
        if how in ("cell", "local") and owner is not None and owner.watched_cell(name):
            return _call(CELL_WRITE, value, self._cell(name), _const(name))
        return value

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.AST | list[ast.stmt]:
        value = self.visit(node.value)
        if not self._in_code() or (isinstance(node.target, ast.Name) and not self._watched_name(node.target)):
            node.value = value
            node.target = self.visit(node.target) if not isinstance(node.target, ast.Name) else node.target
            return node
        op = _const(_OPS[type(node.op)])
        target = node.target
        if isinstance(target, ast.Attribute):
            temp = self._temp()
            obj = ast.NamedExpr(target=ast.Name(id=temp, ctx=ast.Store()), value=self.visit(target.value))
            attr = _const(_mangle(target.attr, self.klass))
            new = _call(INPLACE, op, _call(GETATTR, obj, attr), value)
            call = _call(SETATTR, new, _name(temp), attr)
            return ast.copy_location(ast.Expr(value=call), node)
        if isinstance(target, ast.Subscript):
            obj_temp, key_temp = self._temp(), self._temp()
            obj = ast.NamedExpr(target=ast.Name(id=obj_temp, ctx=ast.Store()), value=self.visit(target.value))
            key = ast.NamedExpr(target=ast.Name(id=key_temp, ctx=ast.Store()), value=self._slice(target.slice))
            new = _call(INPLACE, op, _call(GETITEM, obj, key), value)
            call = _call(SETITEM, new, _name(obj_temp), _name(key_temp))
            return ast.copy_location(ast.Expr(value=call), node)
        assert isinstance(target, ast.Name)
        current = self.visit_Name(ast.copy_location(ast.Name(id=target.id, ctx=ast.Load()), target))
        new = _call(INPLACE, op, current, value)
        stored = self._name_store(target.id, new)
        return ast.copy_location(ast.Assign(targets=[ast.Name(id=target.id, ctx=ast.Store())], value=stored), node)

    def visit_Delete(self, node: ast.Delete) -> ast.AST | list[ast.stmt]:
        if not self._in_code():
            return node
        out: list[ast.stmt] = []
        for target in node.targets:
            out.extend(self._delete(target, node))
        return out

    def _delete(self, target: ast.expr, where: ast.AST) -> list[ast.stmt]:
        if isinstance(target, ast.Attribute):
            call = _call(DELATTR, self.visit(target.value), _const(_mangle(target.attr, self.klass)))
            return [ast.copy_location(ast.Expr(value=call), where)]
        if isinstance(target, ast.Subscript):
            call = _call(DELITEM, self.visit(target.value), self._slice(target.slice))
            return [ast.copy_location(ast.Expr(value=call), where)]
        if isinstance(target, (ast.Tuple, ast.List)):
            out: list[ast.stmt] = []
            for element in target.elts:
                out.extend(self._delete(element, where))
            return out
        if isinstance(target, ast.Name):
            how, _owner = self.scope.resolve(target.id)
            deletion = ast.copy_location(ast.Delete(targets=[ast.Name(id=target.id, ctx=ast.Del())]), where)
            if how == "global":
                hook = ast.Expr(value=_call(GLOBAL_DELETE, _const(self.module), _const(target.id)))
                return [ast.copy_location(hook, where), deletion]
            return [deletion]
        return [ast.copy_location(ast.Delete(targets=[target]), where)]

    def visit_NamedExpr(self, node: ast.NamedExpr) -> ast.AST:
        node.value = self.visit(node.value)
        if self._in_code() and self._watched_name(node.target):
            home = self.scope
            while home.kind == COMPREHENSION and home.parent is not None:
                home = home.parent
            saved, self.scope = self.scope, home
            node.value = self._name_store(node.target.id, node.value)
            self.scope = saved
        return node

    def visit_match_case(self, node: ast.AST) -> ast.AST:
        # a pattern is not an expression: its dotted names and literals stay as they are
        guard = getattr(node, "guard", None)
        if guard is not None:
            node.guard = self._truth(self.visit(guard))  # type: ignore[attr-defined]
        node.body = self._statements(node.body)  # type: ignore[attr-defined]
        return node

    def _temp(self) -> str:
        self.temps += 1
        return f"__rc_t{self.temps}"


def _plain_target(node: ast.expr) -> bool:
    """A target made only of names (``x``, ``a, (b, *c)``): nothing but local bindings, unless a name is shared."""
    if isinstance(node, ast.Name):
        return True
    if isinstance(node, (ast.Tuple, ast.List)):
        return all(_plain_target(e.value if isinstance(e, ast.Starred) else e) for e in node.elts)
    return False

