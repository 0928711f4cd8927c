"""The identity of an interleaving (``result.interleavings``, dpor's classes, duplicate schedules across processes).

Two schedules that differ only in the order of steps that commute (``racecheck.runtime.relation``: two threads
touching different objects, or both only reading one) are the same interleaving: they cannot behave differently.
An interleaving is therefore identified by, for every object, the order in which steps accessed it, a run of
mutually commuting accesses (reads, listings, a directory's entry changes) taken as a set: Mazurkiewicz's
equivalence, read from the accesses every step recorded. A step is named by its thread and its place among its own
scheduling points, the same in every equivalent schedule. Which events a run's key reads (all of them, or a failing
run's causal past) the run's sink says (``racecheck.search.interleaving_sink``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from itertools import repeat
from operator import attrgetter, itemgetter
from typing import Any

from racecheck.runtime.access import FAIRNESS_OBJ, READ, WRITE
from racecheck.runtime.relation import Relation, active
from racecheck.runtime.steps import Access, ObjKind
from racecheck.runtime.trace import TraceEvent

__racecheck_engine__ = True


# (thread, switch, access, point, marks) of a trace event: all an interleaving key depends on
_SHAPE = attrgetter("tid", "switch", "access", "at", "marks")
_TEXT = attrgetter("text")
_AT = itemgetter(3)  # a shape's point

_DIGESTS: dict[tuple, str] = {}  # a key's structure -> its digest
_RELATION: list[Relation] = [active()]  # the relation the caches were filled under

# A trace's shape -> its key. An exploration meets the same few interleavings again and again (far fewer than
# distinct schedules), and the shape is built and hashed by C-level iteration, so a repeat costs that and a lookup
# instead of a pass over the trace in Python.
_KEYS: dict[tuple, str] = {}
_KEY_LIMIT = 1 << 12
_CACHED_EVENTS = 512  # traces up to this long have their keys remembered


def interleaving_key(events: Sequence[TraceEvent]) -> str:
    """A digest of the per-object access order of a trace (the interleaving's identity).

    Every access of every step becomes (object, thread, the point it was made at), notes counted in the step they
    belong to; a stable sort by object puts each object's accesses together in trace order. A point is the step's
    place among its thread's scheduling points (``TraceEvent.at``, or the thread's step number for a trace that
    does not record it), or for a memory access that joined a running step, its own (``TraceEvent.marks``): so a
    thread's accesses are named alike whether other threads could run between them (separate steps) or not (one
    step). Each object becomes the line "<object>\x02<group>\x00<group>..." where a group is one access
    "<thread>.<point>", or a run of mutually commuting accesses, its distinct threads each with the first point it
    has in the run, sorted and joined by \x01; consecutive single accesses of one thread count once (a step that
    repeats an access it already made records it once). The lines, in object order, joined by \x03, are hashed.
    Separators are control characters that no object name contains. ``tests/engine/test_coverage.py`` compares it
    with a plain implementation of that definition on generated traces, and the dpor model test uses the same
    definition."""
    shape = tuple(map(_SHAPE, events))
    if _RELATION[0] is not active():  # a planted relation (a test's): keys made under another one do not hold
        _KEYS.clear()
        _DIGESTS.clear()
        _RELATION[0] = active()
    key = _KEYS.get(shape)
    if key is None:
        key = _digest(shape)
        if len(shape) <= _CACHED_EVENTS:  # a long trace (memory watched) rarely repeats, and would fill memory
            if len(_KEYS) >= _KEY_LIMIT:
                _KEYS.clear()
            _KEYS[shape] = key
    return key


def _digest(shape: tuple, expanded: bool = False) -> str:
    """``interleaving_key`` of a trace's shape: its structure (per object, its groups of steps) is built in one
    pass, and only a structure not met before is turned into text and hashed. A wildcard met on the way (a kind
    ``_plain_runs`` has no runs for) starts it again on the shape written out (``_expanded``): the pass that looked
    for one first cost as much as a third of this one, for the few traces that have one."""
    relation = _RELATION[0]
    runs = relation.runs if expanded else _plain_runs(relation)
    counts: dict[int, int] = {}
    running: dict[int, tuple[int, int]] = {}  # thread -> its running step
    history: dict[Any, list] = {}
    order: list[tuple[int, int]] = []  # every step, for the fairness every step reads once a yield wrote it
    yielded: set[tuple[int, int]] = set()
    # every event knows its point (a run's trace does): a step is named by it, and no step needs counting
    numbered = min(map(_AT, shape), default=0) >= 0
    for tid, switch, access, at, marks in shape:
        if switch == "info":
            if not access:
                continue
            who = (tid, at) if at >= 0 else running.get(tid) or (tid, counts.get(tid, 1) - 1)
        else:
            if numbered:
                who = (tid, at)
            else:
                nth = counts.get(tid, 0)
                counts[tid] = nth + 1
                who = (tid, nth) if at < 0 else (tid, at)
                running[tid] = who
            order.append(who)
            if not access:
                continue
        # the accesses after the step's own joined it at points of their own: each is named by its own point
        whos = (who,) * (len(access) - len(marks)) + tuple(zip(repeat(tid), marks)) if marks else repeat(who)
        for one, who in zip(access, whos, strict=False):  # ``repeat`` has no end
            obj = one.obj
            if obj is FAIRNESS_OBJ:
                yielded.add(who)
                continue
            line = history.get(obj)
            kinds = runs[obj.kind]
            if kinds is None:
                return _digest(_expanded(shape, relation), True)
            together = kinds.get(one.kind)
            if line is None:
                history[obj] = [together, {who} if together is not None else who]
            elif together is not None and line[-2] is together:
                line[-1].add(who)
            else:
                line += (together, {who} if together is not None else who)
    if yielded:
        line = history[FAIRNESS_OBJ] = []
        for who in order:
            if who in yielded:
                line += (None, who)
            elif line and line[-2] is not None:
                line[-1].add(who)
            else:
                line += (runs[ObjKind.FAIRNESS][READ], {who})
    structure = tuple([(obj, _canonical(history[obj][1::2])) for obj in sorted(history, key=_TEXT)])
    key = _DIGESTS.get(structure)
    if key is None:
        lines = [obj.text + "\x02" + "\x00".join(map(_group_text, groups)) for obj, groups in structure]
        text = "\x03".join(lines)
        key = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
        if len(shape) <= _CACHED_EVENTS:
            if len(_DIGESTS) >= _KEY_LIMIT:
                _DIGESTS.clear()
            _DIGESTS[structure] = key
    return key


_PLAIN_RUNS: list[tuple[Relation, dict]] = []


def _plain_runs(relation: Relation) -> dict:
    """``relation.runs`` with None for the wildcards' kinds: what ``_digest`` reads before a shape is expanded."""
    if not _PLAIN_RUNS or _PLAIN_RUNS[0][0] is not relation:
        runs = {kind: None if kind in relation.wildcards else row for kind, row in relation.runs.items()}
        _PLAIN_RUNS[:] = [(relation, runs)]
    return _PLAIN_RUNS[0][1]


def _expanded(shape: tuple, relation: Relation) -> tuple:
    """A shape whose wildcard accesses (``Relation.covers``) are written out as a write of every object they cover
    that the trace touches: a bare point's ``anything`` of every object, unresolved memory of every piece of memory.
    Then the per-object order orders a wildcard against everything it conflicts with."""
    objects = sorted({one.obj for _t, _s, access, _a, _m in shape for one in access if one.obj is not FAIRNESS_OBJ},
                     key=_TEXT)
    wildcards = relation.wildcards
    out = []
    for tid, switch, access, at, marks in shape:
        if any(one.obj.kind in wildcards for one in access):
            # The step's own accesses, then those that joined it at points of their own (``marks``): each keeps its
            # point, so that an access named alike whether it joined a step or made its own stays so expanded.
            own = len(access) - len(marks)
            written = tuple(dict.fromkeys(_written(access[:own], objects, relation)))
            joined: list[Access] = []
            joined_marks: list[int] = []
            for one, mark in zip(access[own:], marks, strict=True):
                for expanded in _written((one,), objects, relation):
                    joined.append(expanded)
                    joined_marks.append(mark)
            access, marks = written + tuple(joined), tuple(joined_marks)
        out.append((tid, switch, access, at, marks))
    return tuple(out)


def _written(access: Sequence[Access], objects: list[Any], relation: Relation) -> list[Access]:
    """``access`` with each wildcard written out as a write of every object it covers (itself included)."""
    out: list[Access] = []
    for one in access:
        wild = one.obj
        if relation.is_wildcard(wild):
            out.extend(Access(obj, WRITE) for obj in objects if obj is wild or relation.covers(wild, obj))
        else:
            out.append(Access(wild, one.kind))
    return out


def _canonical(groups: list) -> tuple:
    """An object's groups as the key names them: a run of commuting accesses by its threads' first points, and a
    thread's consecutive single accesses once."""
    out: list = []
    for group in groups:
        if type(group) is set:
            # each thread with its first point: of the (thread, point) pairs sorted from the last, the first point
            # of a thread is written last (in C, where a loop of ``setdefault`` was a tenth of the key)
            out.append(frozenset(group) if len(group) == 1 else frozenset(dict(sorted(group, reverse=True)).items()))
        elif not (out and type(out[-1]) is tuple and out[-1][0] == group[0]):
            out.append(group)
    return tuple(out)


def _group_text(group: Any) -> str:
    if type(group) is frozenset:
        return "\x01".join(sorted(f"{tid}.{nth}" for tid, nth in group))
    return f"{group[0]}.{group[1]}"
