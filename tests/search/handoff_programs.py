"""Programs that hand a shared object to code racecheck does not watch (``racecheck.control.handoff``), for
``test_handoff.py`` and ``test_handoff_soundness.py``.

The five of issue 46: one thread writes two fields of a shared object with no lock, the other hands the object to
``json.dumps``, ``urllib.parse.urlencode``, ``pickle.dumps``, ``copy.deepcopy`` or ``",".join`` and checks that the
two fields agree; each has a locked twin (both sides under one lock), which is correct.

Then generated programs (``source``, ``load``): a writer thread changes a dict, an object, a list or a nested dict
in separate statements, a reader thread hands them to the standard library (json, pickle, copy, urllib.parse,
``str.join``, ``sorted``, the dict/list/set constructors, ``vars()``, ``getattr`` with a computed name,
``functools.reduce``, itertools, logging), and what the reader got plus the state left is the run's outcome. Their
threads live in a module of their own with its source on disk, so that the line-point reference
(``preempt=[module], memory=False``) puts a point before every line of theirs.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import linecache
import pickle
import sys
import tempfile
import threading
import urllib.parse
from contextlib import nullcontext
from pathlib import Path

import racecheck.runtime


class Pair:
    def __init__(self) -> None:
        self.a = 0
        self.b = 0


def _two(writer, reader) -> None:
    other = threading.Thread(target=writer)
    other.start()
    reader()
    other.join()


def json_dumps(locked: bool = False) -> None:
    d = {"a": 0, "b": 0}
    lock = threading.Lock()
    guard = lock if locked else nullcontext()

    def write():
        with guard:
            d["a"] = 1
            d["b"] = 1

    def read():
        with guard:
            seen = json.loads(json.dumps(d))
        assert seen["a"] == seen["b"], seen

    _two(write, read)


def urlencode(locked: bool = False) -> None:
    params = {"a": "0", "b": "0"}
    lock = threading.Lock()
    guard = lock if locked else nullcontext()

    def write():
        with guard:
            params["a"] = "1"
            params["b"] = "1"

    def read():
        with guard:
            seen = urllib.parse.parse_qs(urllib.parse.urlencode(params))
        assert seen["a"] == seen["b"], seen

    _two(write, read)


def pickle_dumps(locked: bool = False) -> None:
    obj = Pair()
    lock = threading.Lock()
    guard = lock if locked else nullcontext()

    def write():
        with guard:
            obj.a = 1
            obj.b = 1

    def read():
        with guard:
            seen = pickle.loads(pickle.dumps(obj))
        assert seen.a == seen.b, (seen.a, seen.b)

    _two(write, read)


def deepcopy(locked: bool = False) -> None:
    state = {"x": {"a": 0, "b": 0}}
    lock = threading.Lock()
    guard = lock if locked else nullcontext()

    def write():
        with guard:
            state["x"]["a"] = 1
            state["x"]["b"] = 1

    def read():
        with guard:
            seen = copy.deepcopy(state)
        assert seen["x"]["a"] == seen["x"]["b"], seen

    _two(write, read)


def str_join(locked: bool = False) -> None:
    parts = ["0", "0"]
    lock = threading.Lock()
    guard = lock if locked else nullcontext()

    def write():
        with guard:
            parts[0] = "1"
            parts[1] = "1"

    def read():
        with guard:
            seen = ",".join(parts)
        first, second = seen.split(",")
        assert first == second, seen

    _two(write, read)


FIVE = (json_dumps, urlencode, pickle_dumps, deepcopy, str_join)


def locked_twin(program):
    def twin() -> None:
        program(locked=True)

    twin.__name__ = twin.__qualname__ = f"{program.__name__}_locked"
    return twin


# ----- generated programs -------------------------------------------------------------------------------------------

# What the writer does: each statement a line of its own, so that line points separate them.
WRITES = {
    "dict_two": ["D['a'] = 1", "D['b'] = 1"],
    "dict_new": ["D['c'] = 1"],
    "dict_drop": ["D.pop('a', None)"],
    "obj_two": ["P.a = 1", "P.b = 1"],
    "obj_new": ["P.c = 1"],
    "list_two": ["L[0] = 1", "L[1] = 1"],
    "list_append": ["L.append(2)"],
    "nested": ["N['x']['a'] = 1", "N['x']['b'] = 1"],
}
# What the reader hands over, and what it keeps of the answer (a value that differs where the callee saw a
# different state).
READS = {
    "json": ["got = json.dumps(D, sort_keys=True)"],
    "json_nested": ["got = json.dumps(N, sort_keys=True)"],
    "pickle": ["o = pickle.loads(pickle.dumps(P))", "got = (o.a, o.b, getattr(o, 'c', None))"],
    "copy": ["got = sorted(copy.copy(D).items())"],
    "deepcopy": ["got = repr(copy.deepcopy(N))"],
    "urlencode": ["got = urllib.parse.urlencode(D)"],
    "join": ["got = ','.join(map(str, L))"],
    "sorted": ["got = sorted(D.items())"],
    "constructors": ["got = (sorted(dict(D).items()), list(L), sorted(set(L)))"],
    "vars": ["got = sorted(vars(P).items())"],
    "vars_key": ["attributes = vars(P)", "got = (attributes.get('c'), len(attributes))"],
    "vars_late": ["attributes = vars(P)", "x = P.b", "got = (x, attributes['a'])"],
    "getattr": ["name = 'a' if len(L) > 5 else 'b'", "got = getattr(P, name)"],
    "reduce": ["got = functools.reduce(operator.add, L)"],
    "itertools": ["got = list(itertools.chain(L, sorted(D)))"],
    "logging": ["LOG.info('%s %s', D, L)", "got = HANDLER.messages.pop()"],
    "repr": ["got = repr(D)"],
    "str_obj": ["got = str(N)"],
}

PRELUDE = '''\
import copy
import functools
import itertools
import json
import logging
import operator
import pickle
import urllib.parse


class Pair:
    def __init__(self):
        self.a = 0
        self.b = 0


class Keep(logging.Handler):
    def __init__(self):
        super().__init__()
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


HANDLER = Keep()
LOG = logging.getLogger(__name__)
LOG.addHandler(HANDLER)
LOG.setLevel(logging.INFO)
LOG.propagate = False
'''


def source(program: tuple[tuple[str, ...], tuple[str, ...]]) -> str:
    writes, reads = program
    lines = [PRELUDE, "def writer(D, P, L, N):"]
    lines.extend(f"    {line}" for op in writes for line in WRITES[op])
    lines.append("")
    lines.append("def reader(D, P, L, N, results):")
    lines.append("    seen = []")
    for op in reads:
        lines.extend(f"    {line}" for line in READS[op])
        lines.append("    seen.append(got)")
    lines.append("    results.append(seen)")
    return "\n".join(lines) + "\n"


def driver(module):
    def program() -> None:
        d, p, lst, nested = {"a": 0, "b": 0}, module.Pair(), [0, 0], {"x": {"a": 0, "b": 0}}
        results: list = []
        other = threading.Thread(target=module.writer, args=(d, p, lst, nested))
        other.start()
        module.reader(d, p, lst, nested, results)
        other.join()
        outcome = repr((results, sorted(d.items()), sorted(p.__dict__.items()), lst, nested))
        racecheck.runtime.current_run().resources["outcome"] = outcome

    return program


_loaded: dict[tuple, object] = {}
_folder = Path(tempfile.mkdtemp(prefix="racecheck-handoff-programs-"))


def load(program: tuple[tuple[str, ...], tuple[str, ...]]):
    """The test function of ``program`` (its threads in a module of their own, ``threads_module``)."""
    found = _loaded.get(program)
    if found is not None:
        return found
    name = f"handoff_program_{len(_loaded)}"
    path = _folder / f"{name}.py"
    path.write_text(source(program))
    linecache.checkcache(str(path))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    fn = driver(module)
    fn.threads_module = module
    _loaded[program] = fn
    return fn
