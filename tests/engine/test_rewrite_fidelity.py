"""The memory rewriter changes no program's meaning: generated functions over attributes, items, slices, container
methods, globals, closure cells, unpacking, comprehensions, the walrus and private locals compute the same result,
leave the same state and raise the same exception whether run as written or rewritten (hooks installed, outside a
run, where a hook only makes its access). And the private-locals rule (``private_locals``) leaves a container
unrecorded only where no other thread could reach it."""

from __future__ import annotations

import ast
import textwrap

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from racecheck.control import memory_hooks
from racecheck.control.rewrite import rewrite_module
from racecheck.control.scopes import ModuleScopes

KEYS = ["'a'", "'b'", "0", "(1, 2)"]
INTS = st.integers(-3, 3)

# Statement templates: {k} a dict key, {i}/{j} small ints. Each is safe to run in any state, or guarded.
TEMPLATES = [
    "o.a = {i}", "o.a += {i}", "o.b = [o.a, {j}]", "r.append(o.a)", "r.append(getattr(o, 'b', None))",
    "try:\n    del o.b\nexcept AttributeError as e:\n    r.append('no b')",
    "o._C__hidden = {i}", "r.append(C().peek(o))",
    "d[{k}] = {i}", "try:\n    d[{k}] += 1\nexcept KeyError:\n    r.append('missing')", "r.append(d.get({k}))",
    "r.append({k} in d)", "r.append({k} not in d)", "try:\n    del d[{k}]\nexcept KeyError:\n    pass",
    "d.update({{{k}: {i}}})", "r.append(d.setdefault({k}, {i}))", "r.append(sorted(d.items(), key=repr))",
    "for key in list(d):\n    r.append(key)", "r.append(len(d))", "r.append(d.pop({k}, None))",
    "r.append({{**d, 'z': {i}}})", "r.append(dict(d, y={j}))",
    "l.append({i})", "try:\n    l[{i}] = {j}\nexcept IndexError:\n    r.append('short')",
    "l[{i}:{j}] = [{i}, {j}]", "r.append(l[{i}:{j}])", "r.append(l[::-1])", "x, *y = l or [0]\nr.append((x, y))",
    "l.extend(l[:2])", "l.sort()", "r.append(l.pop() if l else None)", "l += [{i}]", "l *= 1",
    "r.append([v * 2 for v in l if v])", "r.append({{v: n for n, v in enumerate(l)}})", "r.append(sum(l))",
    "r.append(max(l, default=None))", "r.append(any(v > {i} for v in l))", "r.append([*l, *d])",
    "s.add({i})", "s |= {{{j}}}", "r.append({i} in s)", "s.discard({j})", "r.append(sorted(s))",
    "G = G + {i}", "G += 1", "r.append(G)", "r.append(bump())",
    "r.append(inc())", "r.append(c)",
    "if (w := d.get({k})) is not None:\n    r.append(w)", "r.append(d or l)", "r.append(l and s)",
    "r.append(not d)", "r.append([] if l else 'empty')",
    "p.append({i})", "p[:0] = [{j}]", "r.append(len(p))", "r.append(sorted(p))", "r.append(p[0] if p else None)",
    "q[{k}] = {i}", "r.append(q.get({k}))", "for key, value in q.items():\n    r.append((key, value))",
    "r.append(dict(q))", "if q and {k} in q:\n    del q[{k}]",
    "while l and len(l) > 4:\n    l.pop(0)", "assert len(d) >= 0, d",
    "o.a, d[{k}] = d.get({k}, 0), o.a", "[o.a, l[:1]] = ({i}, [{j}])", "d[{k}] = d[{k}] = {i}",
    "with Box() as box:\n    box.value = {i}\n    r.append(box.value)",
]

PROGRAM = '''\
G = 0


class C:
    def peek(self, other):
        return getattr(other, "_C__hidden", None)


class Box:
    def __enter__(self):
        self.value = None
        return self

    def __exit__(self, *exc):
        return False


def bump():
    global G
    G += 10
    return G


def program(o, d, l, s):
    global G
    c = 0

    def inc():
        nonlocal c
        c += 1
        return c

    p = []
    q = {{}}
    r = []
{body}
    return r, c, p, q
'''


class Obj:
    def __repr__(self) -> str:
        return f"Obj({sorted(self.__dict__.items(), key=repr)!r})"


def _outcome(module: dict, arguments: tuple) -> tuple:
    o, d, items, s = arguments
    try:
        result: object = module["program"](o, d, items, s)
    except Exception as exc:  # noqa: BLE001
        result = ("raised", type(exc).__name__, str(exc))
    return repr(result), repr(o), repr(d), repr(items), repr(sorted(s)), module["G"]


def _arguments(seed: tuple) -> tuple:
    o = Obj()
    o.a = seed[0]
    return o, dict(seed[1]), list(seed[2]), set(seed[3])


programs = st.lists(
    st.tuples(st.sampled_from(TEMPLATES), st.sampled_from(KEYS), INTS, INTS).map(
        lambda t: t[0].format(k=t[1], i=t[2], j=t[3])),
    min_size=1, max_size=12,
)
states = st.tuples(INTS, st.dictionaries(st.sampled_from(["a", "b", 0]), INTS, max_size=3),
                   st.lists(INTS, max_size=5), st.sets(INTS, max_size=3))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs, states)
def test_rewritten_programs_compute_what_the_originals_do(statements, seed):
    memory_hooks.install()
    source = PROGRAM.format(body=textwrap.indent("\n".join(statements), "    "))
    original: dict = {"__name__": "generated"}
    exec(compile(source, "<generated>", "exec"), original)  # noqa: S102
    rewritten_tree = rewrite_module(source, "<generated>", "generated").tree
    rewritten: dict = {"__name__": "generated"}
    exec(compile(rewritten_tree, "<generated>", "exec"), rewritten)  # noqa: S102
    assert "__rc_" in ast.unparse(rewritten_tree)
    assert _outcome(rewritten, _arguments(seed)) == _outcome(original, _arguments(seed)), source


# ----- the private-locals rule ---------------------------------------------------------------------------------


def _private(source: str) -> frozenset[str]:
    tree = ast.parse(textwrap.dedent(source))
    scopes = ModuleScopes(tree)
    function = next(n for n in tree.body if isinstance(n, ast.FunctionDef))
    return scopes.private(scopes.scope_of(function))


def test_a_list_of_threads_built_and_iterated_here_is_private():
    assert _private("""
        import threading
        def drive(work):
            threads = [threading.Thread(target=work) for _ in range(2)]
            for t in threads:
                t.start()
            done = {}
            done["n"] = len(threads)
            for key, value in done.items():
                pass
            return sorted(threads, key=id)[0], done["n"], sum(x for x in [1, 2] if threads)
        """) == {"threads", "done"}


def test_every_way_out_makes_a_container_shared():
    ways_out = [
        "return box",                 # returned to the caller
        "shared.items = box",         # stored where others can look
        "register(box)",              # handed to any function
        "other = box",                # aliased
        "other = done or box",        # an operand's value is the value of ``or``
        "view = box.items()",         # a view points back at it
        "it = iter(box)",             # so does an iterator kept for later
        "gen = (x for x in box)",     # and a generator expression not consumed at once
        "fn = box.append",            # a bound method holds it
        "worker = lambda: box",       # a closure reads it
        "print(box)",                 # not a builtin that only reads
        "x = f'{box}'",               # formatting calls into its items' code with it
    ]
    for way in ways_out:
        found = _private(f"""
            def f(shared, register, done):
                box = []
                box.append(1)
                {way}
            """)
        assert "box" not in found, way


def test_only_fresh_containers_and_plain_functions_count():
    assert _private("""
        def f(shared):
            box = shared.items
            box.append(1)
        """) == frozenset()
    assert _private("""
        def f():
            box = []
            yield box[0]
        """) == frozenset()
    assert _private("""
        def f():
            box = []
            box.append(1)
            return locals()
        """) == frozenset()
    assert _private("""
        len = lambda x: 0
        def f():
            box = []
            return len(box)
        """) == frozenset()
    assert _private("""
        def f(box):
            box.append(1)
        """) == frozenset()


def test_private_containers_are_not_hooked_and_shared_ones_are():
    tree = rewrite_module(textwrap.dedent("""
        def f(shared):
            mine = {}
            mine["k"] = shared.value
            theirs = shared.table
            theirs["k"] = mine["k"]
            return len(mine)
        """), "<t>", "t").tree
    text = ast.unparse(tree)
    assert "mine['k'] = __rc_ga__(shared, 'value')" in text
    assert "__rc_si__(__rc_gi__(mine, 'k'), theirs, 'k')" not in text
    assert "__rc_si__(mine['k'], theirs, 'k')" in text
    assert "return len(mine)" in text


def test_what_a_private_container_hands_out_is_watched_when_iterated():
    """Iterating ``mine.items()`` reads only ``mine``; iterating what ``mine.pop()`` returns may read a container
    other threads share, so that iteration keeps its hook."""
    text = ast.unparse(rewrite_module(textwrap.dedent("""
        def f(shared):
            mine = [shared.table]
            for key, value in {}.items():
                pass
            seen = {}
            for key in seen.items():
                pass
            for item in mine.pop():
                pass
        """), "<t>", "t").tree)
    assert "for key in seen.items():" in text
    assert "for item in __rc_it__(mine.pop()):" in text


def test_calls_of_inert_builtins_and_truth_of_their_results_get_no_hook_unless_the_name_is_not_the_builtin():
    """``isinstance(x, T)`` reads no container, and its result is no container: no callee hook, no truth hook.
    ``len(x)`` keeps its callee hook (it reads x) but not the truth hook on its int; so does ``str(x)`` (it reads
    what ``x`` holds: a hand-off, ``racecheck.control.handoff``). A module that binds the name itself (or may,
    through a star import) keeps both."""
    text = ast.unparse(rewrite_module(textwrap.dedent("""
        def f(x, box):
            if isinstance(x, int) and len(box):
                return str(x)
            return box
        """), "<t>", "t").tree)
    assert "if isinstance(x, int) and __rc_fn__(len)(box):" in text
    assert "return __rc_fn__(str)(x)" in text
    for shadowing in ("isinstance = lambda a, b: []", "from elsewhere import *"):
        shadowed = ast.unparse(rewrite_module(textwrap.dedent(f"""
            {shadowing}
            def f(x):
                if isinstance(x, int):
                    return 1
            """), "<t>", "t").tree)
        assert "if __rc_tr__(__rc_fn__(isinstance)(x, int)):" in shadowed, shadowing


def test_bool_of_a_shared_container_reads_it():
    import racecheck

    class Box:
        def __init__(self):
            self.items = []

    namespace: dict = {}
    exec(compile(rewrite_module(textwrap.dedent("""
        def check(box):
            return bool(box.items)
        """), "<t>", "t").tree, "<t>", "exec"), namespace)
    memory_hooks.install()
    seen = []

    def test():
        from racecheck import runtime

        namespace["check"](Box())
        racecheck.point("after")  # the accesses of a thread running alone join its step at its next point
        seen.extend(str(a.obj) for e in runtime.current_run().trace for a in e.access if not a.via)

    racecheck.explore(test, strategy="dfs", schedules=1, shrink_budget=0)
    # the program's own read of the list (not a hand-off's walk); ``check`` was compiled here, outside racecheck's
    # install, so calling it hands the box to code racecheck does not watch, whose walk meets the list first and
    # names it under the box
    assert "list#1 in Box#1" in seen, seen


# ----- whole modules -------------------------------------------------------------------------------------------


def test_every_loaded_test_module_and_the_checkpoint_libraries_rewrite_and_compile():
    """A module whose rewrite does not compile would run unwatched (and its verdicts say nothing of its memory):
    every test module pytest has loaded (assertion-rewritten, which the memory rewrite keeps) and the modules the
    checkpoint scenarios run through must compile."""
    import importlib
    import sys

    from racecheck.control import memory_install

    names = [name for name, module in list(sys.modules.items())
             if module is not None and "@py_builtins" in getattr(module, "__dict__", {})]
    assert __name__ in names  # this module itself, rewritten by pytest
    for library in ("fsspec.spec", "fsspec.implementations.local", "lightning.fabric.plugins.io.torch_io",
                    "lightning.pytorch.plugins.io.async_plugin", "lightning.pytorch.callbacks.model_checkpoint",
                    "torch.serialization"):
        try:
            importlib.import_module(library)
        except ImportError:
            continue
        names.append(library)
    failed = []
    for name in names:
        module = sys.modules[name]
        filename = getattr(module, "__file__", None)
        if filename and filename.endswith(".py"):
            memory_install._compiled.pop(filename, None)
            if memory_install.compiled_module(filename, name, module.__dict__) is None:
                failed.append(name)
    assert failed == []
