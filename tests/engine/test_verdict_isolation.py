"""A verdict is a function of the program and its options only (issue 49): nothing an exploration learns or caches
(sampling, rewritten code, module walks, fairness, reused threads) changes what a later one in the same process
reports. Programs of different kinds (explicit points, a barrier, a deadlocked barrier, a yielding spin lock, a
polled flag, results collected by atomic appends, a lazy init that sampled watching learns from, an executor's
checkpoint commit on the fake filesystem with a hand-off to json) are explored one after another in one process, in
both orders, under every strategy, and each verdict (its first failing schedule and token), failing trace, data-race
report and count of sampled runs must be what a fresh process gives for that program alone: the yielding spin lock
after the PCT programs and the barrier is the case issue 49 reported as a livelock. A planted leak (sampled watching
keeping what it learned across explorations) fails it: ``shared_scratch`` finds ``bump`` sharing memory, which
``sampled_lazy`` alone leaves unwatched."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import isolation_programs

SCRIPT = Path(isolation_programs.__file__)


def _explore(*programs: str) -> list[dict]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SCRIPT.parent), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, str(SCRIPT), *programs], capture_output=True, text=True, env=env,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_each_verdict_in_a_sequence_is_the_one_a_fresh_process_gives():
    names = list(isolation_programs.PROGRAMS)
    fresh = {}
    for name in names:
        for entry in _explore(name):
            fresh[(entry["program"], entry["strategy"])] = entry
    sequence = _explore(*names, *reversed(names))
    assert len(sequence) == 2 * len(fresh)
    for entry in sequence:
        alone = fresh[(entry["program"], entry["strategy"])]
        assert entry == alone, f"{entry['program']} under {entry['strategy']}: {entry['verdict']} != {alone['verdict']}"
    # the programs are ones whose verdicts differ: a leak would have something to change
    verdicts = {entry["verdict"].split(":")[0] for entry in fresh.values()}
    assert {"ok", "FAILED after 1 schedules"} <= verdicts
    assert any("Deadlock" in entry["verdict"] for entry in fresh.values())
    assert any(entry["sampled"] for entry in fresh.values())  # sampled watching learned, and was used
