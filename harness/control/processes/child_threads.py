"""Several threads per child: every thread a controlled thread of a child starts is a thread of the run, with its
own proxy in the parent (``P1.T1``, ``P1.T2``, ... beside the child's first thread ``P1.T0``).

The one pipe between a child and the parent carries every thread's messages. Only one thread of the whole run
runs at a time, so in the parent the proxy that holds the baton is the only one reading the pipe, and what it reads
comes from its own thread; the answers it sends to a thread other than the child's first are tagged
(``("to", tid, reply)``). In the child, whichever thread waits for an answer reads the pipe for every waiting
thread (``link.Mailboxes``): a message for another thread goes to that thread's box, and it reads on.

A thread's record in the child has the tid of its proxy, so what the child's stand-ins name (``join T5``, the
accesses of a thread's start and end) is the parent's thread. A wait on the child's own objects (its locks, a
join of its threads) is decided by the parent's scheduler from readiness the child reports: before any message
leaves the child, it evaluates the waits of its parked threads and says which changed (``("ready", {tid:
bool})``), and the parent's point for such a wait is enabled while the child said so. Only the child's threads
change the child's objects, and each of their steps ends with a message, so the parent never decides on stale
readiness.
"""

from __future__ import annotations

import threading
import traceback
from typing import Any

from racecheck import runtime
from racecheck.control.processes.link import portable, registry_of, uncontrolled
from racecheck.runtime import RunContract
from racecheck.runtime.locations import code_location
from racecheck.runtime.teardown import RECORD

__racecheck_engine__ = True

# ----- the child's side ---------------------------------------------------------------------------------------------


def start_in_child(run: Any, thread: Any, real_start: Any, record: Any) -> None:
    """``Thread.start()`` by a thread of the run in a child: the parent starts the thread's proxy (the start
    point) and names it; the thread runs its body once its proxy says go, bound to the run as ``record``."""
    where = code_location(getattr(thread, "_target", None) or type(thread).run)
    tid = run.ask("thread", thread.name, bool(thread.daemon), where)
    rec = record(run, tid)
    run.thread_began()  # from its start point on, the child's memory is no longer one thread's
    setattr(thread, RECORD, rec)
    run.threads.append((thread, rec))
    body = thread.run
    boxes = run.link.boxes
    boxes.add_reader()

    def controlled() -> None:
        runtime.bind(None, None)
        try:
            go = boxes.receive(tid)
        except (EOFError, OSError):
            return
        if go[0] != "go":
            return
        runtime.bind(run, rec)
        try:
            body()
        except BaseException as exc:  # noqa: BLE001 - a thread's exception is a finding, as in the parent
            rec.finished = True
            run.thread_ended()
            _say(run, ("raised", portable(exc), traceback.format_exc()))
            return
        rec.finished = True
        run.thread_ended()
        _say(run, ("exit",))

    thread.run = controlled
    real_start(thread)


def _say(run: Any, message: tuple) -> None:
    runtime.bind(None, None)
    try:
        run.link.send_ready(run)
        run.link.boxes.send(message)
    except OSError:
        pass  # the parent has ended the run


# ----- the parent's side --------------------------------------------------------------------------------------------


class ThreadProxy:
    """The proxy of a thread a child started: a controlled thread of the parent's run that serves the thread's
    requests as the child's first proxy does, its answers tagged with the thread's tid."""

    def __init__(self, run: RunContract, child: Any) -> None:
        self.run = run
        self.child = child
        self.tid = -1

    def serve(self, serve_one: Any) -> None:
        if not self._send(("go", None)):
            return
        while True:
            message = self._wait()
            if message is None or message[0] == "exit":
                return
            if message[0] == "raised":
                raise message[1]
            reply = serve_one(message)
            if reply is not None and not self._send(reply):
                return

    def _send(self, message: Any) -> bool:
        try:
            with uncontrolled(self.run):
                self.child.wire.send(("to", self.tid, message))
        except (OSError, ValueError):
            return False
        except Exception as exc:  # noqa: BLE001 - an answer that does not pickle is the child's error
            return self._send(("err", RuntimeError(f"racecheck: cannot send to {self.child.label}: {exc}")))
        return True

    def _wait(self) -> Any:
        """The thread's next message (a real wait on another process, while this proxy holds the baton)."""
        run = self.run
        run.outside += 1
        try:
            with uncontrolled(run):
                return self.child.wire.recv()
        except (EOFError, OSError):
            return None
        finally:
            run.outside -= 1


def start_proxy(run: Any, label: str, name: str, daemon: bool, where: str, serve_one: Any) -> int:
    """In the parent, on the proxy of a child's thread that starts a thread: the new thread's proxy (its start is
    the start point), named ``P1.Tn``; its tid, which the child's record of the thread takes."""
    registry = registry_of(run)
    child = next(kid for kid in registry.children if kid.label == label)
    number = registry.thread_counts.get(label, 0) + 1
    registry.thread_counts[label] = number
    proxy = ThreadProxy(run, child)
    thread = threading.Thread(target=proxy.serve, args=(serve_one,), name=f"{label}.T{number}", daemon=daemon)
    thread.start()  # the start point
    rec = getattr(thread, RECORD)
    proxy.tid = rec.tid
    if run.locate:  # its first step shows where the thread's code begins, as a thread's shows its target
        rec.loc = where
    registry.process_of[rec.tid] = label
    registry.thread_names[rec.tid] = f"{label}.T{number}"
    run.note(f"{label}.T{number} is T{rec.tid}")
    return rec.tid
