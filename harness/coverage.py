"""Coverage of an exploration: distinct interleavings, duplicate schedules, and a small space seen to its end.

Two schedules that differ only in the order of operations that commute (two threads touching different
resources, or both only reading one) are the same interleaving: they cannot behave differently. An interleaving is
therefore identified by, for every resource, the order in which threads accessed it (consecutive reads collapsed
into a set, since reads commute): Mazurkiewicz's equivalence, read from the trace. ``result.interleavings`` counts
the distinct ones. Plain memory touched between scheduling points is invisible to racecheck and not counted: the
orders it sees are those of named resources (locks, queues, events, futures, files, ``racecheck.point`` names).

Random walk and PCT draw schedules independently, so on a small program they repeat themselves. ``ChoiceTree``
remembers every executed choice sequence as a path in a tree (each node knows how many options its decision had);
a subtree whose every option has been run to the end is complete. ``Steering`` wraps a strategy's chooser and,
when the strategy's pick leads into a complete subtree, takes the first option that does not, so no schedule is
run twice while any new one is left; when the root is complete the whole space has been run: ``exhausted``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from racecheck.race import MEMORY, access_of
from racecheck.strategies import Chooser
from racecheck.trace import TraceEvent

__racecheck_engine__ = True


_ACCESS: dict[str, tuple[tuple[str, ...], bool]] = {}  # op text -> its named resources (sorted), read-only?
_ACCESS_LIMIT = 1 << 16


def _named_access(op: str) -> tuple[tuple[str, ...], bool]:
    """The named resources of an operation (plain memory left out, sorted) and whether it only reads them."""
    found = _ACCESS.get(op)
    if found is None:
        access = access_of(op)
        found = (tuple(sorted(access.resources - {MEMORY})), access.read_only)
        if len(_ACCESS) >= _ACCESS_LIMIT:
            _ACCESS.clear()
        _ACCESS[op] = found
    return found


def interleaving_key(events: Sequence[TraceEvent]) -> str:
    """A digest of the per-resource access order of a trace (the interleaving's identity).

    Runs once per schedule over the whole trace, so it is written for speed: each access is the text
    "<thread> <op>", collected per resource (a run of reads as a set), and the lines of all resources, in sorted
    order, are hashed as one text. Separators are control characters no op text or path contains (NUL-free)."""
    history: dict[str, list[Any]] = {}
    access = _ACCESS
    labels: dict[tuple[int, str], str] = {}
    for event in events:
        if event[4] == "info":
            continue
        op = event[2]
        resources, read_only = access.get(op) or _named_access(op)
        if not resources:
            continue
        who = (event[1], op)
        me = labels.get(who)
        if me is None:
            me = labels[who] = f"{event[1]} {op}"
        if len(resources) == 1 and not read_only:  # the common case: one resource, written
            line = history.get(resources[0])
            if line is None:
                history[resources[0]] = [me]
            else:
                line.append(me)
            continue
        for resource in resources:
            line = history.get(resource)
            if line is None:
                history[resource] = [{me}] if read_only else [me]
            elif not read_only:
                line.append(me)
            elif type(line[-1]) is set:
                line[-1].add(me)
            else:
                line.append({me})
    text = "\x03".join(
        resource + "\x02" + "\x00".join("\x01".join(sorted(e)) if type(e) is set else e for e in history[resource])
        for resource in sorted(history)
    )
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


class _Node:
    __slots__ = ("arity", "children", "complete")

    def __init__(self) -> None:
        self.arity = 0  # 0 until a decision was taken here; a run that ended here leaves it a leaf
        self.children: dict[int, _Node] = {}
        self.complete = False


class ChoiceTree:
    """Every choice sequence run so far; ``complete`` once every option of every decision has been run."""

    def __init__(self) -> None:
        self.root = _Node()
        self.runs = 0
        self.duplicates = 0

    @property
    def complete(self) -> bool:
        return self.root.complete

    def add(self, choices: Sequence[int], arities: Sequence[int]) -> bool:
        """Record one executed run; False when exactly this schedule had been run before."""
        self.runs += 1
        node = self.root
        path = [node]
        new = False
        for choice, arity in zip(choices, arities, strict=False):
            node.arity = arity
            child = node.children.get(choice)
            if child is None:
                child = node.children[choice] = _Node()
                new = True
            node = child
            path.append(node)
        if not new and node.complete:
            self.duplicates += 1
        if not node.children:  # a run ended here: this schedule is done
            node.complete = True
        for parent in reversed(path[:-1]):
            if parent.complete:
                break
            if len(parent.children) < parent.arity or not all(c.complete for c in parent.children.values()):
                break
            parent.complete = True
        return new


class Steering(Chooser):
    """Wraps a strategy's chooser: a pick that leads into a completely explored subtree becomes the first option
    that does not (the strategy's own order is kept everywhere else)."""

    def __init__(self, inner: Chooser, tree: ChoiceTree) -> None:
        self.inner = inner
        self.node: _Node | None = tree.root

    def _steer(self, n: int, pick: int) -> int:
        node = self.node
        if node is None:
            return pick
        child = node.children.get(pick)
        if child is not None and child.complete:
            for option in range(n):
                other = node.children.get(option)
                if other is None or not other.complete:
                    pick = option
                    break
        self.node = node.children.get(pick)
        return pick

    def pick_thread(self, enabled, current_enabled, yielding, current=None):
        return self._steer(len(enabled), self.inner.pick_thread(enabled, current_enabled, yielding, current))

    def pick_value(self, n, label):
        return self._steer(n, self.inner.pick_value(n, label))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)
