"""The run as a child of it sees it: the stand-ins the child inherited (fork) or had installed (spawn:
``spawned``) (its locks, events, sleeps, files, memory, line points) find a run bound to the child's threads, and
every scheduling point they make is a request to the thread's proxy, which makes the same point in the parent's
run (``proxy_point``). So a child's file
operations are points of the one schedule, with the accesses the parent's would have, and its waits on its own
objects are decided by the one scheduler.

Objects the child makes are its own (named ``P1.Lock#1``): only the child's threads can reach them, so whether one
of its waits can go on is read in the child and reported to the parent (``child_threads``); a wait that nothing
in the child will ever end is a point that never becomes enabled in the parent, which the parent's scheduler
reports as a deadlock or times out on the virtual clock, as for a thread. Threads a thread of the run starts in
the child are threads of the run (``child_threads``); threads started otherwise run uncontrolled, and a wait of
theirs on the child's objects polls in real time.
"""

from __future__ import annotations

import time
from typing import Any

from racecheck import runtime
from racecheck.control.processes import child_memory, child_threads, inherited, shares, spawned
from racecheck.control.processes.link import caller_line, portable, registry_of
from racecheck.runtime.access import JOIN, on_thread

__racecheck_engine__ = True

_real_sleep = time.sleep
# Requests of a child that other modules serve in the parent (``grandchildren``), by kind: each is called on the
# proxy as ``serve(run, message, at_line)`` and its value is the answer.
SERVERS: dict[str, Any] = {}
AT_EXIT: list[Any] = []  # called with the child's run as its process's ``run`` returns, after its threads ended
_POLL_S = 0.001  # how often a thread the child started, which is not the run's, looks at a wait of its own


class ChildRecord:
    """The record of a thread of the run in the child: what the stand-ins read of a thread. Its tid is its proxy's
    in the parent."""

    def __init__(self, run: ChildRun, tid: int) -> None:
        self.tid = tid
        self.run = run
        self.thread = None
        self.points = 0
        self.real_held = 0
        self.unwinding = False
        self.finished = False
        self.launched = True


class ChildRun:
    """The run's contract (``runtime.RunContract``) in a child: points are requests to the proxy."""

    watch: Any = None  # the child's memory, when the run watches memory (``child_memory``)
    locate = False  # the child sends its own line with each point
    in_child = True  # processes and multiprocessing objects the child makes are the root's (``grandchildren``)

    def __init__(self, link: Any, label: str, setting: dict[str, Any]) -> None:
        self.link = link
        self.label = label
        self.resources: dict[str, Any] = {}
        self.aborting = False
        self.outside = 0
        self.config = setting["config"]
        self.counters: dict[str, int] = {}
        self.record = ChildRecord(self, setting.get("tid", 0))
        if setting.get("memory"):
            self.watch = child_memory.ChildWatch(self.record.tid)
            self.memory_steps = child_memory.ChildSteps(self)
        self.stale = False
        self.threads: list[tuple[Any, ChildRecord]] = []  # (Thread, record) of the threads it started
        # How many threads of the run the child has that have not ended (its first, and those it started: kept by
        # ``child_threads``), and whether a lone one's plain memory makes no points (``child_memory.lone``)
        self.live = 1
        self.lone_cut = setting.get("lone", False)
        self.pending: dict[int, list] = {}  # tid -> [the wait's predicate, what the parent was last told]
        # ``os.getpid()`` inside the run: fixed, and its own (code that compares pids to notice a fork still can)
        self.logical_pid = 4242 + int(label[1:])
        # What the parent's run keeps that the child's stand-ins read: the real disk's names (watched files), a
        # copy as of the child's first step.
        self.resources.update(setting["resources"])

    def mine(self) -> bool:
        return getattr(runtime.thread_state.thread, "run", None) is self

    def readiness(self) -> dict[int, bool]:
        """The waits of parked threads whose answer changed since the parent was last told (``child_threads``)."""
        changed = {}
        for tid, entry in self.pending.items():
            now = bool(entry[0]())
            if now != entry[1]:
                entry[1] = changed[tid] = now
        return changed

    def ask(self, *message: Any) -> Any:
        return self.link.request(message)

    def tell(self, *message: Any) -> None:
        self.link.tell(message)

    # ----- the contract ------------------------------------------------------------------------------------------

    def new_object_id(self, kind: str) -> str:
        number = self.counters.get(kind, 0) + 1
        self.counters[kind] = number
        return f"{self.label}.{kind}#{number}"

    def now(self) -> float:
        return self.ask("now")

    def schedule(self, op: str, *, access: tuple = (), enabled: Any = None, timeout: float | None = None,
                 yielding: bool = False, skip: int = 0) -> bool:
        if not self.mine():
            return self._poll(enabled, timeout)
        me = runtime.thread_state.thread
        me.points += 1
        if enabled is None:
            self.ask("point", op, access, caller_line(), True, None, yielding)
            return True
        if timeout is not None and timeout <= 0:
            self.ask("point", op, access, caller_line(), True, None, yielding)
            return bool(enabled())
        # A wait on the child's own objects: only the child's threads change them, so the parent decides from the
        # readiness the child reports (``child_threads``), from now until the point is granted or times out.
        ready = bool(enabled())
        self.pending[me.tid] = [enabled, ready]
        try:
            went = self.ask("point", op, access, caller_line(), ("wait", ready), timeout, yielding)
        finally:
            del self.pending[me.tid]
        return True if went else bool(enabled())

    def _poll(self, enabled: Any, timeout: float | None) -> bool:
        """A wait by a thread the child started (not the run's): in real time."""
        if enabled is None:
            return True
        end = None if timeout is None else time.monotonic() + timeout
        while not enabled():
            if end is not None and time.monotonic() >= end:
                return False
            _real_sleep(_POLL_S)
        return True

    def sleep(self, seconds: float) -> None:
        if self.mine():
            self.ask("sleep", float(seconds), caller_line())
        else:
            _real_sleep(seconds)

    def choose(self, n: int, label: str) -> int:
        return self.ask("choose", n, label) if n > 1 and self.mine() else 0

    def note(self, op: str, skip: int = 0, access: tuple = ()) -> None:
        if self.mine():
            self.tell("note", op, access, caller_line())

    effect = note

    def touch(self, access: tuple) -> None:
        if self.mine():
            self.tell("touch", access)

    def narrow(self, access: tuple) -> None:
        if self.mine():
            self.tell("narrow", access)

    def caller_record(self) -> Any:
        return runtime.thread_state.thread if self.mine() else self.record

    def add_cleanup(self, description: str, action: Any) -> None:
        """The child's own cleanup runs in the child."""

    def start_thread(self, thread: Any, real_start: Any) -> None:
        if not self.mine():
            return real_start(thread)
        return child_threads.start_in_child(self, thread, real_start, ChildRecord)

    def shutdown(self) -> None:
        """After the process's ``run``: wait for its non-daemon threads of the run, as ``threading._shutdown``
        does before a process exits, each a join point."""
        for thread, rec in self.threads:
            if not thread.daemon and not rec.finished:
                self.schedule(f"join T{rec.tid}", access=on_thread(rec.tid, JOIN), enabled=lambda r=rec: r.finished)
        for hook in AT_EXIT:  # then what multiprocessing's exit handler does (``grandchildren``)
            hook(self)

    def crash(self, reason: str) -> None:
        raise NotImplementedError("racecheck: a power loss inside a child process is not modelled")

    # ----- memory (``child_memory``): each access a request; real locks' critical sections are plain -----------

    def memory(self, op: str, access: tuple, skip: int = 0, shown: str | None = None) -> None:
        if not self.mine():
            return
        me = runtime.thread_state.thread
        if me.real_held or self.link.alone == me.tid or self._lone(access):
            # inside a real lock's critical section, alone in the run, or the one thread of the child: no point
            self.merge_memory(access)

        elif self.ask("memory", op, access, caller_line(), shown)[1]:
            self.link.alone = me.tid

    def memory_point(self, op: str, declared: tuple, skip: int = 0, shown: str | None = None) -> bool:
        me = runtime.thread_state.thread
        if not self.mine() or me.real_held or self.link.alone == me.tid:
            return False
        if self._lone(declared):
            return False
        decided, alone = self.ask("memory_point", op, declared, caller_line(), shown)
        if alone:
            self.link.alone = me.tid
        return bool(decided)

    def thread_began(self) -> None:
        """A thread of the run started in the child (at its start point): its memory is no longer one thread's."""
        self.live += 1

    def thread_ended(self) -> None:
        """A thread of the run in the child ended: all its accesses are made (``_lone``)."""
        self.live -= 1

    def _lone(self, access: tuple) -> bool:
        """Whether the calling thread, the child's one thread of the run that has not ended, makes ``access``
        without a point: memory no other thread of the run can reach then (``child_memory``'s lone threads)."""
        return self.live == 1 and self.lone_cut and child_memory.private(access)

    def replace_memory(self, access: tuple) -> None:
        if self.mine():
            self.tell("replace_memory", access)

    def merge_memory(self, access: tuple) -> None:
        if self.mine():
            self.link.merge(("merge_memory", "", access, caller_line(), None))

    def real_lock(self, me: Any, change: int, lock: Any) -> None:
        """Real locks in a child: no memory point inside their critical sections (``real_held``, as in the
        parent); each take and give goes to the parent in order with the merged accesses (``inherited``)."""
        if self.mine():
            self.link.merge(inherited.real_lock_message(change, lock))


def join(link: Any, setting: dict[str, Any]) -> None:
    """In a child, before its process's code runs: its thread is the run's, as the child sees it (a spawned
    child first installs the stand-ins a forked one inherited: ``spawned``)."""
    if setting.get("install") is not None:
        spawned.install(setting.get("home"), setting["install"])
    run = ChildRun(link, setting["label"], setting)
    runtime.bind(run, run.record)
    inherited.adopt(run)  # a forked child's copies of the parent's stand-ins are its own


def serve_message(run: Any, message: tuple, at_line: Any) -> tuple | None:
    """In the parent, on a proxy of a child's thread: one request of that thread (a call of a served object, or a
    point, note or question of the child's stand-ins), performed; the answer, or None (one-way)."""
    if message[0] == "call":
        _, mid, method, args, kwargs, line = message
        call = getattr(registry_of(run).models[mid], method)
        try:
            return ("ok", at_line(line)(call, args, kwargs) if line else call(*args, **kwargs))
        except Exception as exc:  # noqa: BLE001 - the child's call raises it there
            return ("err", portable(exc))
    try:
        value = proxy_point(run, message, at_line)
    except Exception as exc:  # noqa: BLE001 - the child's call raises it there
        return ("err", portable(exc))
    return None if message[0] in ONE_WAY else ("ok", value)


def proxy_point(run: Any, message: tuple, at_line: Any) -> Any:
    """In the parent, on a proxy of a child's thread: the point (or note) a child's stand-in asked for."""
    kind = message[0]
    if kind == "point":
        _, op, access, line, ready, timeout, yielding = message
        if ready is True:
            call = lambda: run.schedule(op, access=access, yielding=yielding)  # noqa: E731
            return at_line(line)(call, (), {}) if line else call()
        ready_of, me = registry_of(run).ready, runtime.current_thread_record().tid
        ready_of[me] = ready[1]  # ("wait", whether it can end now): later changes come as "ready" messages
        call = lambda: run.schedule(op, access=access, enabled=lambda: ready_of.get(me, False),  # noqa: E731
                                    timeout=timeout)
        try:
            return at_line(line)(call, (), {}) if line else call()
        finally:
            ready_of.pop(me, None)
    if kind in child_memory.KINDS:
        return child_memory.serve(run, message, at_line)
    if kind == "ready":  # the child's parked waits whose answer changed (``child_threads``)
        registry_of(run).ready.update(message[1])
        return None
    if kind == "thread":  # a thread of the child's starts a thread: its proxy here
        label = registry_of(run).process_of[runtime.current_thread_record().tid]
        return child_threads.start_proxy(run, label, message[1], message[2], message[3],
                                         lambda request: serve_message(run, request, at_line))
    if kind == "sleep":
        _, seconds, line = message
        return at_line(line)(run.sleep, (seconds,), {}) if line else run.sleep(seconds)
    if kind == "share":  # the parent's fake filesystem (``shares``), on the child's behalf
        label = registry_of(run).process_of[runtime.current_thread_record().tid]
        line = message[5]
        call = lambda: shares.serve(run, label, message)  # noqa: E731
        return at_line(line)(call, (), {}) if line else call()
    if kind == "now":
        return run.now()
    if kind == "choose":
        return run.choose(message[1], message[2])
    if kind == "note":
        _, op, access, line = message
        return at_line(line)(run.note, (op,), {"access": access}) if line else run.note(op, access=access)
    server = SERVERS.get(kind)
    if server is not None:
        return server(run, message, at_line)
    if kind == "touch":
        return run.touch(message[1])
    if kind == "narrow":
        return run.narrow(message[1])
    raise ValueError(f"racecheck: a child asked for {kind!r}")


ONE_WAY = ("note", "touch", "narrow", "ready", *child_memory.ONE_WAY)  # messages the proxy does not answer
