"""Memory discovery walks a module's namespace once per process; that walk must run none of the program's code on
the thread under test, or a process that walked the module before (an earlier test, an earlier exploration)
records fewer steps than a fresh one, and a token found in the one diverges when replayed in the other (CI saw it:
``getattr(torch, "__wrapped__")`` ran torch's module ``__getattr__`` in a rank's first walk of a module).

In one process a run that brings code under watch is run again, so the walk's steps never reach a token there; a
forked child walks in every schedule whatever the parent had walked, unless the parent had walked it first. The
modules are written afresh for each test, under names no other test uses, so this process has never walked them."""

from __future__ import annotations

import importlib
import multiprocessing
import sys
import textwrap

import pytest
import racecheck

LAZY = """
_aliases = {"old_name": len}


def helper():
    _aliases["calls"] = len  # a step of the parent's thread: it stays runnable while the child walks


def __getattr__(name):  # a module's lazy attributes, as torch's: it reads the module's own dict
    found = _aliases.get(name)
    if found is None:
        raise AttributeError(name)
    return found
"""

USER = """
import {lazy}


def go(box):
    box.append("worker")
"""


def _modules(tmp_path):
    tag = f"walk_history_{id(tmp_path) & 0xFFFFFF:x}"
    lazy, user = f"{tag}_lazy", f"{tag}_user"
    (tmp_path / f"{lazy}.py").write_text(textwrap.dedent(LAZY))
    (tmp_path / f"{user}.py").write_text(textwrap.dedent(USER.format(lazy=lazy)))
    sys.path.insert(0, str(tmp_path))
    try:
        return importlib.import_module(lazy), importlib.import_module(user)
    finally:
        sys.path.remove(str(tmp_path))


def _child(user):
    user.go([])


def test_a_forked_childs_walk_is_the_same_whether_or_not_the_parent_walked_first(tmp_path):
    pytest.importorskip("torch.distributed")  # loaded, it makes every child look for torch's functions by name
    lazy, user = _modules(tmp_path)
    fork = multiprocessing.get_context("fork")

    def program():
        child = fork.Process(target=_child, args=(user,))
        child.start()
        for _ in range(4):  # the lazy module comes under watch in the parent (its __getattr__ too) while the child
            lazy.helper()  # runs, and the parent's thread stays runnable beside it
        child.join()
        raise AssertionError("always: the trace and token are what is compared")

    def parent_walks():
        _child(user)

    fresh = racecheck.explore(program, strategy="random", seed=1, schedules=1, shrink_budget=0).failure
    racecheck.explore(parent_walks, strategy="random", seed=1, schedules=1, shrink_budget=0)  # the parent walks now
    walked = racecheck.explore(program, strategy="random", seed=1, schedules=1, shrink_budget=0).failure
    assert fresh is not None and walked is not None
    assert "call dict#1.get" not in fresh.trace, fresh.trace  # the lazy module's __getattr__, run by the walk
    assert fresh.trace == walked.trace
    assert fresh.token == walked.token
