"""What a verdict covered: the schedule space run, what was watched, and what was seen escaping.

A clean verdict is only as good as what it looked at. ``Scope`` says it in three parts that ``Result.summary()``,
the CLI, the pytest plugin and ``results.json`` all print from here:

* the schedule space: exhausted (every interleaving of what was watched: dpor; every schedule within a preemption
  bound: dfs; every distinct schedule of a small space: random, pct, pos) or sampled (so many schedules of an
  unbounded space), or one replayed schedule;
* what was watched: threads and synchronisation always, plain memory unless ``memory=False`` (in how many
  schedules only sampled: ``racecheck.control.memory_sampling``), files on the fake
  filesystem (``fs=``), on the real disk as scheduling points (a ``files=`` option, where the engine has it), or
  not at all;
* what escaped, as far as the exploration saw it: threads stuck in code racecheck does not control (uncontrolled
  blocking), real locks made before the run (their critical sections run whole), modules left real by
  ``exclude=``, modules that could not be watched (no Python source, or it did not compile). State inside C code
  and the standard library's own code is never watched, which the README says once rather than every verdict.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from racecheck.control import processes_escape
from racecheck.control.options import ControlOptions
from racecheck.runtime import ExtensionOptions
from racecheck.search.options import Parts
from racecheck.search.registry import is_systematic, reduces

if TYPE_CHECKING:
    from racecheck.search.result import Result

__racecheck_engine__ = True

_SHOWN_NAMES = 5
SYNC_WATCHED = "threads, locks, queues, events, futures, sleep"


@dataclass(frozen=True)
class Scope:
    """One verdict's coverage statement (``Result.coverage``)."""

    space: str  # "exhausted", "sampled" or "replayed"
    strategy: str
    schedules: int
    interleavings: int
    bound: int | None  # dfs/dpor's preemption bound (None: none); None for the sampling strategies too
    memory: bool
    files: str  # "fake fs (posix)", "real disk" or "not watched"
    escaped: tuple[str, ...] = ()
    sampled: int = 0  # schedules whose memory watching was sampled (the rest watched every access)
    processes: int = 1  # the most processes one schedule had (the test's own and its multiprocessing children)

    def space_text(self) -> str:
        if self.space == "replayed":
            return "one replayed schedule"
        counted = (f"{self.schedules} schedule{'s' * (self.schedules != 1)}, "
                   f"{self.interleavings} interleaving{'s' * (self.interleavings != 1)}")
        if self.space == "sampled":
            return f"a sample of the schedule space ({self.strategy}: {counted}; not exhausted)"
        if is_systematic(self.strategy) and self.bound is not None:
            bound = f"{self.bound} preemption{'s' * (self.bound != 1)}"
            return f"every schedule with at most {bound} ({self.strategy}, exhausted within the bound: {counted})"
        if reduces(self.strategy):
            return f"every interleaving of what was watched ({self.strategy}, no bound, exhausted: {counted})"
        return f"every distinct schedule ({self.strategy}, exhausted: {counted})"

    def watched_text(self) -> str:
        memory = "plain memory" if self.memory else "no plain memory (memory=False)"
        if self.memory and self.sampled:
            whole = self.schedules - self.sampled
            memory += (f" (every access in {whole} of {self.schedules} schedules, the others sampled: code that "
                       "showed no shared memory ran unwatched)")
        files = f"files on the {self.files}" if self.files != "not watched" else "files not watched"
        processes = f", processes: {self.processes}" if self.processes > 1 else ""
        return f"{SYNC_WATCHED}{processes}, {memory}, {files}"

    def escaped_text(self) -> str:
        return "; ".join(self.escaped) if self.escaped else "nothing seen"

    def text(self) -> str:
        """The statement in one line."""
        return f"covered: {self.space_text()}; watched: {self.watched_text()}; escaped: {self.escaped_text()}"

    def to_dict(self) -> dict:
        return {"space": self.space, "strategy": self.strategy, "schedules": self.schedules,
                "interleavings": self.interleavings, "bound": self.bound, "memory": self.memory,
                "files": self.files, "escaped": list(self.escaped), "sampled": self.sampled,
                "processes": self.processes, "text": self.text()}

    @classmethod
    def from_dict(cls, data: dict) -> Scope:
        return cls(data["space"], data["strategy"], int(data["schedules"]), int(data["interleavings"]),
                   data.get("bound"), bool(data["memory"]), data["files"], tuple(data.get("escaped", ())),
                   int(data.get("sampled", 0)), int(data.get("processes", 1)))


def files_watched(world: ExtensionOptions) -> str:
    """How an exploration watches files (its extensions' options): the fake filesystem, the real disk as scheduling
    points, or not at all."""
    fs = world.fs
    if fs is not None:
        name = fs if isinstance(fs, str) else getattr(fs, "semantics", None) or type(fs).__name__
        return f"fake fs ({name})"
    return "real disk" if world.files else "not watched"


def _names(names: list[str]) -> str:
    shown = ", ".join(names[:_SHOWN_NAMES])
    more = len(names) - _SHOWN_NAMES
    return shown + (f" and {more} more" if more > 0 else "")


def escaped(control: ControlOptions, leaked: list[str], real_locks: bool, unwatched: list[str],
            processes: Sequence[str] = (), handed: tuple[str, ...] = ()) -> tuple[str, ...]:
    """What the exploration saw escape its control; ``processes``: the uncontrolled processes it saw started or
    talked to (``control.processes_escape``), each with its kind and line; ``handed``: what it said of shared objects
    handed to code it does not watch (``racecheck.control.handoff_counts.handed_over``)."""
    out = []
    if processes:
        out.append(f"processes racecheck does not control ({'; '.join(processes)})")
    if leaked:
        threads = sorted(set(leaked))
        out.append(f"a hang ({_names(threads)} stuck in an uncontrolled wait)")
    if real_locks:
        out.append("real locks made before the run (each critical section ran whole, never interleaved)")
    excluded = [getattr(m, "__name__", str(m)) for m in control.exclude]
    if excluded:
        out.append(f"modules left real by exclude= ({_names(excluded)})")
    if unwatched and control.memory:
        out.append(f"modules whose memory was not watched (no Python source, or it did not compile: "
                   f"{_names(sorted(unwatched))})")
    if control.memory:
        out.extend(handed)
    return tuple(out)


def scope_of(parts: Parts, result: Result, real_locks: bool, unwatched: list[str], replayed: bool = False,
             handed: tuple[str, ...] = ()) -> Scope:
    """The coverage statement of ``result``, an exploration (or a replay) under ``parts``."""
    search, control = parts.search, parts.control
    space = "replayed" if replayed else "exhausted" if result.exhausted else "sampled"
    bound = search.bound if is_systematic(search.strategy) else None
    return Scope(space, result.strategy, result.schedules, result.interleavings, bound, bool(control.memory),
                 files_watched(parts.extensions),
                 escaped(control, list(result.leaked_threads), real_locks, unwatched, processes_escape.seen(), handed),
                 0 if replayed else result.sampled, result.processes)
