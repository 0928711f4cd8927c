"""Where the code under test is: the source location a trace shows at every scheduling point.

A point is asked for by the engine (a lock stand-in, the fake filesystem, ``racecheck.point``), several frames
below the user's line. The walk goes up from there to the innermost frame whose module is not the engine's (a
module that sets ``__racecheck_engine__ = True``) nor the stdlib's synchronisation code, and stops at the bottom of a
controlled thread (``thread_bottom``): nothing above it belongs to the code under test.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from racecheck.runtime.trace import display_path, frame_path

__racecheck_engine__ = True

# Stdlib modules whose frames sit between a stand-in and the user's line (``threading.Condition.wait`` calling our
# lock, a ``with`` block's ``contextlib`` frame): skipped like the engine's own.
_SKIP_FILES: set[str] = set()
for _mod_name in ("threading", "queue", "concurrent.futures._base", "concurrent.futures.thread", "contextlib"):
    _mod = sys.modules.get(_mod_name) or __import__(_mod_name, fromlist=["_"])
    if getattr(_mod, "__file__", None):
        _SKIP_FILES.add(_mod.__file__)


_USER, _ENGINE, _BOTTOM = 0, 1, 2  # what a frame's code is to the walk: the answer, skipped, or nothing beyond
# id(code) -> [code, kind, {instruction offset: "path.py:line" as traces show it}]. Keyed by identity: a code
# object's hash is not cached by CPython and covers its constants and names, so hashing it costs more than the rest
# of a frame's visit, and the walk asked twice per frame. The entry holds the code itself, so its id cannot be
# reused while it is cached.
_CODES: dict[int, list[Any]] = {}
# The ids of the engine functions at the bottom of a thread (no code under test above them). Public so the
# scheduler can skip ``thread_bottom`` for a body it has marked already; only ``thread_bottom`` adds to it.
BOTTOM_CODE_IDS: set[int] = set()
_BOTTOM_KEEP: list[Any] = []  # their code objects, kept alive so the ids above stay theirs
_CACHE_LIMIT = 50_000  # code created at run time (exec, lambdas in generated code) must not grow the cache forever


def thread_bottom(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Mark an engine function that a thread starts in (a controlled thread's body, an executor worker's loop):
    a location walk that reaches it stops there, as nothing above it belongs to the code under test. Without
    this, every point of an executor worker walked (and turned into frame objects) its whole stack."""
    code = fn.__code__
    if id(code) not in BOTTOM_CODE_IDS:
        BOTTOM_CODE_IDS.add(id(code))
        _BOTTOM_KEEP.append(code)
    _CODES.pop(id(code), None)
    return fn


def is_engine_frame(frame: Any) -> bool:
    """Whether ``frame`` runs the engine's code or the stdlib's synchronisation code (never the code under test)."""
    return bool(frame.f_globals.get("__racecheck_engine__") or frame.f_code.co_filename in _SKIP_FILES)


def _classify(code: Any, frame: Any) -> list[Any]:
    """The cache entry of ``code``: whether the walk skips it, stops at it or answers with it."""
    if id(code) in BOTTOM_CODE_IDS:
        kind = _BOTTOM
    elif is_engine_frame(frame):
        kind = _ENGINE
    else:
        kind = _USER
    if len(_CODES) >= _CACHE_LIMIT:
        _CODES.clear()
    entry = _CODES[id(code)] = [code, kind, {}]
    return entry


def caller_location(depth: int = 2) -> str:
    """file:line of the innermost frame that belongs to the code under test (not the engine, not stdlib sync).

    Called at every scheduling point, so both questions asked of a frame are memoised per code object: whether
    its code is to be skipped, and the display text of each of its instructions. The text is exactly what the
    uncached walk produced, so traces stay byte-identical.

    ``depth`` is where the walk starts. Every frame the walk passes through has to become a frame object (CPython
    3.11+ creates them lazily), which made this walk the largest cost of a baton handoff; so callers that know how
    many engine frames sit between them and the user's code say so (``schedule(..., skip=n)``), and
    ``sys._getframe`` jumps over those without creating them. The walk still goes on past any other engine frame,
    so a hint only ever names frames that are certainly the engine's; it stops at a thread's bottom."""
    frame = sys._getframe(depth)
    codes = _CODES
    while frame is not None:
        code = frame.f_code
        entry = codes.get(id(code))
        if entry is None:
            entry = _classify(code, frame)
        kind = entry[1]
        if kind == _USER:
            lasti = frame.f_lasti  # the instruction, not the line: f_lineno scans the code's line table
            location = entry[2].get(lasti)
            if location is None:
                location = entry[2][lasti] = f"{frame_path(frame)}:{frame.f_lineno}"
            return location
        if kind == _BOTTOM:
            break
        frame = frame.f_back
    return ""  # an engine-internal thread (an executor worker's own loop): the op text says enough


def code_location(fn: Any) -> str:
    """file:line where ``fn`` (a function or a bound method) is defined, as traces show it; "" if it has no code
    (a builtin, a callable object)."""
    code = getattr(fn, "__code__", None) or getattr(getattr(fn, "__func__", None), "__code__", None)
    if code is None:
        return ""
    module = getattr(fn, "__module__", None) or getattr(getattr(fn, "__func__", None), "__module__", None)
    return f"{display_path(code.co_filename, module)}:{code.co_firstlineno}"


def stuck_location(frame: Any) -> str:
    """Where a thread stuck in uncontrolled code is: its innermost frame, and the innermost frame of the code
    under test that led there when that is another one ("a.py:3 (wait), called from test.py:9 (worker)")."""
    inner = ""
    user = ""
    while frame is not None:
        here = f"{frame_path(frame)}:{frame.f_lineno} ({frame.f_code.co_name})"
        if not inner:
            inner = here
        if not user and not is_engine_frame(frame):
            user = here
        frame = frame.f_back
    return inner if inner == user or not user else f"{inner}, called from {user}"
