"""What code racecheck does not watch does with the objects it is handed, by callee (``control.handoff`` reads it).

Three effects: ``READS`` (it looks at what it is handed, all of it), ``MUTATES`` (it may change every item of its
first argument and reads the rest), ``UNKNOWN`` (anything: conflicting with everything). A callee named in
``BY_NAME`` has that effect (None: it looks at nothing but identity and type); a function of a module in
``READER_MODULES`` reads; a builtin container's method reads when named in ``CONTAINER_READS`` and mutates
otherwise; every other callee is unknown. Streams are a matter of their own (``control.handoff_streams``).
"""

from __future__ import annotations

__racecheck_engine__ = True

READS, MUTATES, UNKNOWN = "reads", "mutates", "unknown"

# Callees by ``module.qualname`` (a leading underscore dropped from the module: ``_pickle.dumps`` is
# ``pickle.dumps``): what they do with the objects they are handed. ``None``: nothing (they keep references, or
# look only at identity and type).
BY_NAME: dict[str, str | None] = {
    **dict.fromkeys(("json.dumps", "json.dump", "json.encoder.JSONEncoder.encode",
                     "json.encoder.JSONEncoder.iterencode", "pickle.dumps", "pickle.dump", "pickle.Pickler.dump",
                     "copy.copy", "copy.deepcopy", "pprint.pformat", "pprint.pprint", "pprint.pp", "reprlib.repr",
                     "functools.reduce", "str.join", "bytes.join", "str.format", "str.format_map", "repr", "ascii",
                     "str", "vars", "format", "print", "builtins.repr", "builtins.ascii", "builtins.format",
                     "builtins.print",
                     "operator.itemgetter.__call__", "operator.attrgetter.__call__", "operator.eq", "operator.ne",
                     "operator.contains", "operator.countOf", "operator.indexOf", "statistics.mean",
                     "statistics.median", "statistics.fmean", "heapq.nlargest", "heapq.nsmallest",
                     "bisect.bisect", "bisect.bisect_left", "bisect.bisect_right", "csv.writer.writerow",
                     "dataclasses.asdict", "dataclasses.astuple", "dataclasses.replace"), READS),
    **dict.fromkeys(("random.shuffle", "random.Random.shuffle", "heapq.heappush", "heapq.heappop",
                     "heapq.heapify", "heapq.heapreplace", "heapq.heappushpop", "bisect.insort", "bisect.insort_left",
                     "bisect.insort_right"), MUTATES),
    **dict.fromkeys(("threading.Thread", "threading.Timer", "multiprocessing.context.Process",
                     "multiprocessing.context.ForkProcess", "multiprocessing.context.SpawnProcess", "functools.partial",
                     "multiprocessing.context.ForkServerProcess", "multiprocessing.process.BaseProcess", "weakref.ref",
                     "weakref.proxy", "weakref.finalize", "id", "type", "isinstance", "issubclass", "callable",
                     "builtins.id", "builtins.type", "builtins.isinstance", "builtins.issubclass", "builtins.callable",
                     "operator.is_", "operator.is_not", "object", "super", "object.__init__", "object.__new__",
                     "object.__init_subclass__", "dataclasses.is_dataclass", "dataclasses.fields",
                     "contextvars.ContextVar.get", "contextvars.ContextVar.set"), None),
}
# Modules whose every function and method only looks at what it is handed: readers.
READER_MODULES = frozenset({"json", "pickle", "copy", "pprint", "reprlib", "urllib.parse", "logging", "textwrap",
                             "string", "itertools", "statistics", "base64", "html", "shlex", "fnmatch", "difflib",
                             "struct", "zlib", "hashlib", "binascii", "csv", "decimal", "fractions", "math", "cmath",
                             "collections", "enum", "dataclasses", "re", "os.path", "posixpath", "ntpath",
                             "genericpath", "urllib.request", "datetime", "uuid", "ipaddress"})
CONTAINER_READS = frozenset({"get", "__getitem__", "__contains__", "keys", "values", "items", "copy", "count",
                              "index", "__len__", "__iter__", "__reversed__", "issubset", "issuperset", "isdisjoint",
                              "union", "intersection", "difference", "symmetric_difference", "__eq__", "__ne__",
                              "__repr__", "__str__", "__format__", "__reduce_ex__", "__reduce__", "__getstate__",
                              "__sizeof__", "__hash__", "__or__", "__and__", "__sub__", "__xor__", "__add__",
                              "__mul__", "__lt__", "__le__", "__gt__", "__ge__", "__copy__", "__deepcopy__",
                              "fromkeys"})
