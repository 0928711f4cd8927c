"""How a failure's exception reads in a message: ``Type: text``, and for an ``assert`` the statement that failed.

A bare ``assert x == 2`` raises an ``AssertionError`` with no text, which would read ``AssertionError: `` in every
summary; a reader needs the assertion itself. So an ``AssertionError`` names the asserting statement (from the
innermost frame of its traceback, read from the source file) and where it is; the values pytest's assertion
rewriting put in the message (``assert 1 == 2``) follow it. Everything comes from the source and the exception, so
the same failure reads the same in every replay.
"""

from __future__ import annotations

import ast
import linecache
import os
from functools import lru_cache

__racecheck_engine__ = True

MAX_STATEMENT = 200  # characters of the asserting statement shown (a longer one ends with "...")


def exception_text(exc: BaseException) -> str:
    """``Type: message``; for an ``AssertionError`` with no text or pytest's rewritten one (``assert 1 == 2``),
    ``AssertionError: assert <statement> (file.py:LINE)``, followed by that text when there is one."""
    name = type(exc).__name__
    text = str(exc)
    if not isinstance(exc, AssertionError) or (text and not text.startswith("assert ")):
        return f"{name}: {text}"  # an assert's own message says what the author wanted said
    where = assert_site(exc)
    if where is None:
        return f"{name}: {text}" if text else name
    statement, location = where
    if not text:
        return f"{name}: {statement} ({location})"
    return f"{name}: {statement} ({location}): {text}"  # pytest's rewriting: the values under the statement


def assert_site(exc: BaseException) -> tuple[str, str] | None:
    """The ``assert`` statement that raised ``exc`` on one line, and ``file.py:LINE``; None when the innermost
    frame's source is not an assert statement (an ``AssertionError`` raised by hand) or cannot be read."""
    tb = exc.__traceback__
    if tb is None:
        return None
    while tb.tb_next is not None:
        tb = tb.tb_next
    filename = tb.tb_frame.f_code.co_filename
    lineno = tb.tb_lineno
    statement = _statement(filename, lineno)
    if statement is None:
        return None
    return statement, f"{os.path.basename(filename)}:{lineno}"


@lru_cache(maxsize=256)
def _statement(filename: str, lineno: int) -> str | None:
    lines = linecache.getlines(filename)
    if not lines or lineno > len(lines):
        return None
    source = "".join(lines)
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        line = lines[lineno - 1].strip()
        return _clip(line) if line.startswith("assert") else None
    for node in ast.walk(tree):
        if isinstance(node, ast.Assert) and node.lineno <= lineno <= (node.end_lineno or node.lineno):
            segment = ast.get_source_segment(source, node) or lines[lineno - 1]
            return _clip(" ".join(part.strip() for part in segment.splitlines()))
    return None


def _clip(text: str) -> str:
    return text if len(text) <= MAX_STATEMENT else text[: MAX_STATEMENT - 3] + "..."
