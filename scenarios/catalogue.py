"""The catalogue itself: name -> Scenario, in display order. Each scenario's module holds its workload and oracle.

Why a registry module of its own: ``racecheck.scenarios`` re-exports it, and adding a scenario is one line here.
"""

from __future__ import annotations

from racecheck.scenarios import (
    crash,
    faults,
    manager_ranks,
    manager_ranks_process,
    managers,
    ordering,
    trainer,
    workload,
)
from racecheck.scenarios.core import Scenario, define

_FAKE = ("posix", "windows")
_NO_CRASH = "a power loss can only be simulated on the fake filesystem"
_NO_INSTANT = "the instant check reads the fake filesystem's store without a scheduling point"
# The trainer-fit scenarios explore the IO under a real Trainer.fit, whose training loop makes ~77,000 plain memory
# accesses per schedule (none shared with the checkpoint worker): they run with memory=False, over synchronisation
# and files, unless the caller asks for memory=True (``scenarios.run(..., memory=True)``).

_ALL = [
    define("delete-while-queued", ordering.delete_while_queued),
    define("delete-while-writing", ordering.delete_while_writing),
    define("overwrite-same-path", ordering.overwrite_same_path),
    define("evict-before-commit", crash.evict_before_commit, recovery=crash.evict_before_commit_recovery,
           semantics=_FAKE, small=False, why=_NO_CRASH),
    define("load-while-pending", ordering.load_while_pending),
    define("teardown-flush", ordering.teardown_flush),
    define("error-propagation", faults.error_propagation),
    define("snapshot-isolation", ordering.snapshot_isolation),
    define("crash-consistency", crash.crash_consistency, recovery=crash.crash_consistency_recovery,
           semantics=_FAKE, small=False, why=_NO_CRASH),
    define("windows-replace-open", faults.windows_replace_open),
    define("trainer-fit", trainer.trainer_fit, small=False, memory=False),
    *[define(f"trainer-fit-{name}", fit, small=False, memory=False) for name, fit in trainer.VARIANTS.items()],
    define("resume-last", crash.resume_last, recovery=crash.resume_last_recovery, semantics=_FAKE, small=False,
           why=_NO_CRASH),
    define("workload", workload.workload),
    # checkpoint managers (takes="manager"): a tracker and keep_last_n retention over async saves
    define("manager-retention", managers.manager_retention, semantics=_FAKE, small=False, takes="manager",
           why=_NO_INSTANT),
    define("manager-crash", managers.manager_crash, recovery=managers.manager_crash_recovery, semantics=_FAKE,
           small=False, takes="manager", why=_NO_CRASH),
    # the same saves by a manager on two ranks (forked processes of the run in one gloo group, modelled)
    # memory=False: over files, synchronisation and collectives (memory watched costs ~7x a schedule:
    # docs/checkpoint-managers.md), unless the caller asks for memory=True
    define("manager-ranks", manager_ranks.manager_ranks, semantics=_FAKE, small=False, takes="manager",
           why=_NO_INSTANT, memory=False),
    # the same with DCP's process-based async_save: each rank's checkpoint daemon a grandchild of the run; only
    # managers declaring async_checkpointer = "process"; watchdog 10 s: a daemon's first start on a loaded machine
    define("manager-ranks-process", manager_ranks_process.manager_ranks_process, semantics=_FAKE, small=False,
           takes="manager", saver="process", why=_NO_INSTANT, memory=False, watchdog=10.0),
]

CATALOGUE: dict[str, Scenario] = {s.name: s for s in _ALL}
