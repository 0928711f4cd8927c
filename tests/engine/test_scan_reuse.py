"""The module walk remembered between explorations (``racecheck.control.scan``) is keyed by the address of a module's
globals. A module dropped since (pytester re-imports test modules under the same name; a runner loads one program
after another as the same module name) frees its globals, and a new module's may be put at the same address with the
same name and size: what was found in the old one must not be taken for the new one's, or a name holding a real
primitive goes unswapped and the new program runs a real lock or a real sleep (issue 49: a verdict must not depend
on what the process explored before). The address reuse is simulated by moving the old entry to the new key."""

from __future__ import annotations

import sys
import threading
import types

from racecheck.control.scan import Scan, module_ref

REAL = threading.Lock()


def _module(name: str, **values: object) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__dict__.update(values)
    return module


def test_a_new_module_at_a_dropped_ones_address_is_walked_again():
    scan = Scan()
    swap_ids = frozenset({id(REAL)})
    name = "racecheck_scan_probe"

    def reached(module_name: str, _namespace: dict) -> bool:
        return module_name == name

    old = _module(name, lock=REAL)
    sys.modules[name] = old
    try:
        assert [names for _, names in scan.targets(swap_ids, reached, None)] == [("lock",)]
        new = _module(name, guard=REAL)  # the same name and size, the primitive under another name
        assert len(new.__dict__) == len(old.__dict__)
        scan.found[id(new.__dict__)] = scan.found.pop(id(old.__dict__))  # as if ``new``'s globals took the address
        sys.modules[name] = new
        assert [names for _, names in scan.targets(swap_ids, reached, None)] == [("guard",)]
    finally:
        sys.modules.pop(name, None)


def test_explorations_that_alternate_swaps_each_find_their_own_walk_again():
    """Two configurations explored in turn (files on the real disk as points, then off, as bench_engine's rows and a
    test session with several configurations do) each reuse what their own last walk found: the walk that looks at
    every module (``reached`` for each) ran once per set of swaps, not once per exploration."""
    scan = Scan()
    other = threading.Lock()
    first, second = frozenset({id(REAL)}), frozenset({id(REAL), id(other)})
    name = "racecheck_scan_alternating"
    looked: list[str] = []

    def reached(module_name: str, _namespace: dict) -> bool:
        looked.append(module_name)
        return module_name == name

    sys.modules[name] = _module(name, lock=REAL, guard=other)
    try:
        answers = []
        for swaps in (first, second, first, second, first):
            answers.append(sorted(names for _, names in scan.targets(swaps, reached, None)))
        assert answers == [[("lock",)], [("lock", "guard")], [("lock",)], [("lock", "guard")], [("lock",)]]
        assert looked.count(name) == 2, looked.count(name)
    finally:
        sys.modules.pop(name, None)


def test_a_module_that_refuses_weak_references_is_remembered_by_a_strong_one():
    """sys.modules may hold a module type made in C that has no weak references (cffi's ``Lib``, which
    the cryptography stack puts there): the walk keeps it by a strong reference instead of failing the exploration."""
    refusing = 12345  # an int refuses weak references as such a module does
    assert module_ref(refusing)() == refusing
    module = _module("racecheck_scan_weak")
    assert module_ref(module)() is module
