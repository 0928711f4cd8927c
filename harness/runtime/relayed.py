"""Where a failure relayed from another process was raised, for a failure's signature.

A child process's exception reaches the test as another exception raised by the parent's waiting code, always at the
same line: torch's ``ProcessRaisedException`` at ``spawn.py:211``, a pool's or a process executor's exception with
a ``RemoteTraceback`` cause. Two different failures of the children then share one signature, so a swap that turns
"rank 1's shard was deleted" into "rank 0's checkpoint is incomplete" looked like "still fails the same way" and the
racing pair was never named. What the child raised survives only as its formatted traceback, carried in the relaying
exception's arguments or in a cause that was never raised in this process (no traceback of its own); its last frame
and exception type are the child's "where raised".

Only ``BaseException``'s own slots are read (``args``, ``__cause__``, ``__traceback__``, through their descriptors):
no ``__str__`` or property of the program's runs, so reading a signature never runs the program's code.
"""

from __future__ import annotations

import os
import re

__racecheck_engine__ = True

_HEADER = "Traceback (most recent call last):"
_FRAME = re.compile(r'^\s*File "([^"]+)", line (\d+)', re.MULTILINE)
_EXCEPTION = re.compile(r"^([A-Za-z_][\w.]*)(?::|$)", re.MULTILINE)
_args = BaseException.args.__get__
_cause = BaseException.__cause__.__get__
_traceback = BaseException.__traceback__.__get__


def _texts(exc: BaseException) -> list[str]:
    texts = [arg for arg in _args(exc) if isinstance(arg, str)]
    cause = _cause(exc)
    if cause is not None and _traceback(cause) is None:  # never raised here: text from elsewhere
        texts += [arg for arg in _args(cause) if isinstance(arg, str)]
    return texts


def where_relayed(exc: BaseException) -> str:
    """``"AssertionError at rank_programs.py:39"``: the exception type and innermost frame of the last traceback
    that ``exc`` carries as text (a child process's failure), or "" when it carries none. The file is shown by its
    base name: the child's paths are those of another process, possibly another machine."""
    for text in reversed(_texts(exc)):
        start = text.rfind(_HEADER)
        if start < 0:
            continue
        block = text[start + len(_HEADER):]
        frames = list(_FRAME.finditer(block))
        if not frames:
            continue
        last = frames[-1]
        kind = _EXCEPTION.search(block, last.end())
        name = kind.group(1) if kind is not None else "?"
        return f"{name} at {os.path.basename(last.group(1))}:{last.group(2)}"
    return ""


def relayed_where(exc: BaseException, where: str) -> str:
    """``where`` (the line the exception was raised at here), with where the child raised it when ``exc`` relays a
    child's failure."""
    child = where_relayed(exc)
    return f"{where} <- {child}" if child else where
