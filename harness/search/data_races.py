"""Data races: conflicting accesses of two threads to one attribute, item, global, cell or file that no
synchronisation orders, found in every schedule explored, passing or failing, as ThreadSanitizer reports them.

Happens-before is built over one run's trace with vector clocks (FastTrack's epochs), step by step as the run goes
(``racecheck.search.race_clocks``, fed by the data-race sink): every thread has a clock,
every synchronisation object one too. What each access of a step does to them is read from its kind
(``racecheck.runtime.access``), never from display text:

* an object of the program's memory (a ``MemObj``) or a file or directory is *checked*: each access is compared
  with the last access of every other thread of every kind that conflicts with it (``dependency.KINDS_CONFLICT``);
  an earlier one whose epoch the accessing thread's clock does not cover is a race;
* a synchronisation object (a lock, queue, event, condition, future, semaphore, barrier, executor, a thread's
  start/end) orders: a look (``READ``: ``is_set``, ``qsize``; ``WAIT``, ``JOIN``, a thread's ``BEGIN``) acquires
  its clock, every other operation (release, put, get, set, notify, start, end, ...) acquires and releases it. That
  orders more than a real lock/queue does, never less: a race reported is one that nothing orders;
* the engine's own objects (the virtual clock, fairness, fault counters, a point's wildcard or named state, memory
  it cannot name) neither order nor race: sleep is no synchronisation, and the engine's bookkeeping is no
  program's memory.

A step runs alone from its point to its thread's next one, so its accesses, the notes it made (a release) and the
memory accesses that joined it (``TraceEvent.marks``) are placed in order by the thread's point they were made at;
a real lock made before the run (``racecheck.control.real_locks``) orders its critical sections through
``Run.real_sync``. A thread that begins without having been started (the test function; a crash's recovery
check) comes after everything before it.

Per access this is a category test, a dict lookup and a comparison per other thread and kind that touched the
object, as every schedule of every exploration pays it. Source lines cost a stack walk, so a schedule run without
them is run again with them (``RaceLog.wants_locations``) only when it shows a race not seen before; a race is
reported once per object kind (``Counter.value``, not ``Counter#2.value``), pair of operations and source lines.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from fnmatch import fnmatchcase
from typing import Any

from racecheck.control.processes.link import thread_labels
from racecheck.runtime.relation import Relation
from racecheck.runtime.scheduler import Run
from racecheck.runtime.steps import Obj
from racecheck.search.post_budget import FACTOR, FLOOR
from racecheck.search.race_clocks import Found

__racecheck_engine__ = True

MODES = ("report", "fail", "ignore")
RERUNS = 16  # runs again with source lines, beyond one per new kind of race, that an exploration may spend
RERUN_EVERY = 8  # ... and no more than one of them per this many runs: each costs a whole run (a small Trainer.fit's
# schedules each showed a new pair, and a 10-schedule exploration ran 20)


@dataclass(frozen=True)
class RaceAccess:
    """One side of a data race: the thread (as the trace names it), the operation, its source line
    ("path/file.py:LINE", "" when not known) and the index of its event in that schedule's trace."""

    thread: str
    op: str
    location: str
    step: int

    def to_dict(self) -> dict:
        return {"thread": self.thread, "op": self.op, "location": self.location, "step": self.step}

    def describe(self) -> str:
        where = f" @{self.location}" if self.location else ""
        return f"{self.thread} {self.op}{where}"


@dataclass(frozen=True)
class DataRace:
    """Two conflicting accesses to ``obj`` that nothing orders; ``first`` came first in trace order. ``schedule``
    is the index of the first schedule where it showed and ``token`` replays it; ``benign``: marked intended
    (``Config.benign``), reported but never failing."""

    obj: str
    first: RaceAccess
    second: RaceAccess
    schedule: int
    token: str
    benign: bool = False

    def describe(self) -> str:
        """The one line every frontend prints."""
        mark = " [benign]" if self.benign else ""
        return (f"data race on {self.obj}: {self.first.describe()} and {self.second.describe()}, ordered by no "
                f"synchronisation (schedule #{self.schedule}){mark}")

    def key(self) -> tuple:
        """What makes two reports the same race: the object's kind, and both operations with their lines."""
        return (object_kind(self.obj), frozenset({(self.first.op, self.first.location),
                                                  (self.second.op, self.second.location)}))

    def to_dict(self) -> dict:
        return {"obj": self.obj, "first": self.first.to_dict(), "second": self.second.to_dict(),
                "schedule": self.schedule, "token": self.token, "benign": self.benign}

    @classmethod
    def from_dict(cls, data: dict) -> DataRace:
        return cls(data["obj"], RaceAccess(**data["first"]), RaceAccess(**data["second"]), int(data["schedule"]),
                   str(data["token"]), bool(data.get("benign", False)))


_NUMBER = re.compile(r"(@T\d+)?#\d+")


def object_kind(obj: Obj | str) -> str:
    """``obj`` without what differs from run to run: object numbers (``Counter#2.value`` -> ``Counter.value``), an
    item's key (``dict#2['k']`` -> ``dict[...]``), a file's path (``file``). A report read back from JSON names its
    object by text only: there a file is told by the text a file's object has always had."""
    if isinstance(obj, Obj):
        if obj.is_file:
            return obj.kind.value
        obj = obj.text
    elif obj.startswith(("file ", "dir ")):  # text at the edge: a report's JSON
        return obj.split(" ", 1)[0]
    base, bracket, _rest = obj.partition("[")
    return _NUMBER.sub("", base) + ("[...]" if bracket else "")


def race_lines(races: Iterable[DataRace]) -> list[str]:
    """How every frontend prints an exploration's data races: a count, then one line per race not marked benign
    (no lines when there is none)."""
    races = list(races)
    if not races:
        return []
    harmful = [race for race in races if not race.benign]
    benign = len(races) - len(harmful)
    also = f" (and {benign} marked benign)" if benign else ""
    return [f"data races: {len(harmful)}{also}", *(f"  {race.describe()}" for race in harmful)]


def is_benign(patterns: Iterable[str], obj: Obj | str, locations: Iterable[str]) -> bool:
    """Whether a race on ``obj`` between accesses at ``locations`` is marked intended by one of ``patterns``
    (``Config.benign``): an object's kind or name (``Stats.hits``, ``*.hits``, ``global app.config.flag``,
    ``file /tmp/*``), or a source line of either access (``stats.py:14``, a path's tail); ``*`` and ``?`` match
    as in file names."""
    kind = object_kind(obj)
    obj = str(obj)
    for pattern in patterns:
        if fnmatchcase(kind, pattern) or fnmatchcase(obj, pattern):
            return True
        if ":" in pattern:
            for loc in locations:
                if loc and (loc == pattern or loc.endswith("/" + pattern) or fnmatchcase(loc, pattern)):
                    return True
    return False


def failing(races: Iterable[Found], patterns: Iterable[str]) -> Found | None:
    """The first of a run's ``races`` that is not marked benign (what fails it under ``data_races="fail"``)."""
    patterns = tuple(patterns)
    for found in races:
        if not is_benign(patterns, found[0], (found[1][2], found[2][2])):
            return found
    return None


def describe_found(found: Found) -> str:
    """A race of one run in one line (the message of a ``data_races="fail"`` failure)."""
    return _as_race(found, -1, "", False).describe().rsplit(" (schedule", 1)[0]


def _as_race(found: Found, schedule: int, token: str, benign: bool, labels: dict[int, str] | None = None) -> DataRace:
    obj, (t1, k1, l1, i1, _p1, *via1), (t2, k2, l2, i2, _p2, *via2) = found
    # the report names the object by its text: a plain str crosses to another process (execnet) and to JSON
    return DataRace(obj.text, RaceAccess(_thread(t1, labels), _op(obj, k1, "".join(via1)), l1, i1),
                    RaceAccess(_thread(t2, labels), _op(obj, k2, "".join(via2)), l2, i2), schedule, token, benign)


def _op(obj: Obj, kind: str, via: str) -> str:
    """An access as a report names it; one made by code racecheck does not watch names the object and the callee
    watched code handed it to: ``read all of dict#1 via json.dumps``."""
    word = Relation.word(obj, kind)
    return f"{word} {obj.text} via {via}" if via else word


def _thread(tid: int, labels: dict[int, str] | None) -> str:
    """A thread as a report names it: ``T1``, or ``T1 (P1.T0)`` for a thread of a child process."""
    label = labels.get(tid) if labels else None
    return f"T{tid} ({label})" if label else f"T{tid}"


def _coarse(found: Found) -> tuple:
    return (object_kind(found[0]), frozenset({found[1][1], found[2][1]}))


def _fine(found: Found) -> tuple:
    return (found[0], found[1][1], found[1][0], found[1][4], found[2][1], found[2][0], found[2][4])


class RaceLog:
    """An exploration's data races, each once, first found first: what ``Result.data_races`` lists.

    Races come from runs with source lines only (a report names lines). A run without them that shows a kind of
    race not seen before (object kind and operations), or a pair of accesses not seen before while the budget of
    ``RERUNS`` lasts (at most one per ``RERUN_EVERY`` runs), is worth running again with them
    (``wants_locations``); the others add nothing new."""

    def __init__(self, search: Any) -> None:
        self.patterns = tuple(search.benign or ())
        self.races: dict[tuple, DataRace] = {}
        self.kinds: set[tuple] = set()
        self.pairs: set[tuple] = set()
        self.reruns = 0
        self.runs = 0  # runs whose races were taken (``add``)
        # The reruns' steps, within ``FACTOR`` times the steps the exploration ran otherwise (``FLOOR`` at least),
        # as the pair's and shrinking's reruns: a run of 10^5 steps costs its rerun as much again, and a sampled
        # run's rerun watches everything (10x the steps of the micro workload's). ``explored``: every run's steps
        # so far (``Session.steps_run``, set by the schedule loop); ``unlocated``: the runs refused for it.
        self.rerun_steps = 0
        self.explored: Callable[[], int] = lambda: 0
        self.unlocated = 0
        self.real_locks = False  # a real lock made before the run was taken in some schedule

    def wants_locations(self, run: Run, races: list[Found]) -> bool:
        """Whether ``run``, whose data races are ``races``, is worth running again with source lines."""
        if run.locate or not races:
            return False
        fresh_pair = False
        for found in races:
            if _coarse(found) not in self.kinds:
                return self._steps_left()
            fresh_pair = fresh_pair or _fine(found) not in self.pairs
        # a sampled run's rerun watches every access (``racecheck.search.widening``), a learning run's cost: only for
        # a kind of race not seen before
        budget = min(RERUNS, 1 + self.runs // RERUN_EVERY)
        return fresh_pair and self.reruns < budget and not run.memory_steps.sampled and self._steps_left()

    def _steps_left(self) -> bool:
        """Whether the reruns' step budget has room for one more; counts the run refused when not (once: a run
        refused in ``Schedules.after`` is accounted for there, and one granted is asked again in ``_settle`` with
        nothing run in between)."""
        if self.rerun_steps < max(FLOOR, FACTOR * (self.explored() - self.rerun_steps)):
            return True
        self.unlocated += 1
        return False

    def note(self) -> str:
        """What the report says when runs went without their rerun ("" when none did)."""
        if not self.unlocated:
            return ""
        return (f"data races: {self.unlocated} runs that showed new ones were not run again with source lines (their "
                f"reruns' budget of {FACTOR}x the exploration's steps, {FLOOR} at least, was spent: "
                f"{self.rerun_steps} steps); races only they showed are not listed")

    def add(self, run: Run, races: list[Found], schedule: int, token: Callable[[], str],
            located: bool | None = None) -> None:
        """Take the ``races`` of ``run`` (schedule index ``schedule``; ``token()`` replays it). A run without source
        lines only marks its races as seen, unless ``located`` says no run with them can be had."""
        self.runs += 1
        if run.memory_steps.real_sync:
            self.real_locks = True
        if not races:
            return
        keep = run.locate if located is None else located
        labels = thread_labels(run)
        made = ""
        for found in races:
            self.kinds.add(_coarse(found))
            self.pairs.add(_fine(found))
            if not keep:
                continue
            benign = is_benign(self.patterns, found[0], (found[1][2], found[2][2]))
            race = _as_race(found, schedule, "", benign, labels)
            key = race.key()
            if key not in self.races:
                made = made or token()
                self.races[key] = replace(race, token=made)

    def listed(self) -> list[DataRace]:
        return list(self.races.values())
