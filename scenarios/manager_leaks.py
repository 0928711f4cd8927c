"""The "no leaks" oracle of the manager scenarios: once the scenario's calls are over, no thread of the manager is
still running.

Why at the run's completion rather than right after ``close()``: a DCP worker told to stop (``shutdown(wait=False)``
in a done callback) is still a live thread when ``close()`` returns, and ends as soon as it is scheduled; racecheck
completes a run only when nothing can run any more, so a thread still there then is parked for good (an executor
worker waiting for work nobody will give, a daemon thread waiting on an event nobody sets): nothing would stop it
before the interpreter exits. Processes are the control layer's own check (``LeakedProcess``, a daemon child still
running); their proxy threads are skipped here so that a leaked process is named as a process.
"""

from __future__ import annotations

from typing import Any

from racecheck import runtime
from racecheck.control.processes.link import registry_of


class LeakedThread(AssertionError):
    """A thread of the manager still running, parked for good, when the scenario's run completes."""


def no_leaked_threads() -> None:
    """For the calling controlled thread's run: a thread still parked when the run completes fails it."""
    run = runtime.current_run()
    if run is not None:
        runtime.at_completion(lambda: leaked_thread(run))


def leaked_thread(run: Any) -> tuple[int, BaseException] | None:
    """The first thread of ``run`` (not a process's proxy) that has not finished, as a failure of that thread."""
    proxies = registry_of(run).process_of
    for rec in run.threads:
        if not rec.launched or rec.finished or rec.tid in proxies:
            continue
        name = vars(rec.thread).get("_name", "?") if rec.thread is not None else "?"  # no property of the program's
        return rec.tid, LeakedThread(
            f"T{rec.tid} ({name}) is still running when the scenario ends, waiting in '{rec.op}': a leaked thread "
            "(the manager's close() left it behind; an executor never shut down?)")
    return None
