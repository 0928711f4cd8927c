"""frontrun 0.7's DPOR on the workloads bench_strategies gives racecheck's dpor, for the comparison table there.

    frontrun python benchmarks/frontrun_side.py [--runs 10]

frontrun must run under its own launcher (``frontrun python ...``: it preloads a library that reports I/O), so
bench_strategies starts this script in a subprocess and reads the one JSON line it prints. Three workloads, the
same programs as racecheck's side of the table:

* the locked counter (two threads, ``with lock: n += 1``): executions until frontrun's DPOR says the space is done;
* the racy counter (``n += 1``): executions to the lost update;
* the minimal checkpoint race: stock Lightning ``AsyncCheckpointIO``, ``save(a); remove(a); teardown()`` on the
  caller, the write on the plugin's executor thread; the oracle is that ``a.ckpt`` is gone afterwards. frontrun has
  no fake filesystem, so it runs on a real temporary directory. Run ``--runs`` times: how often it reports the
  leak, and how often its own replay of the counterexample reproduces it (its ``reproduction_successes``).

And ``peer_programs.PROGRAMS`` (frontrun's headline counter rebuilt from its description, three classic bugs, and
their correct twins): executions and seconds to the first violation, or to the end of the search.

Only wall-clock figures and counts are printed; nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def _counter_state():
    class Counter:
        def __init__(self) -> None:
            self.n = 0
            self.lock = threading.Lock()

    return Counter()


def _locked(counter) -> None:
    with counter.lock:
        counter.n += 1


def _racy(counter) -> None:
    counter.n += 1


def _counters(frontrun) -> dict:
    out = {}
    for name, worker in (("locked_counter", _locked), ("racy_counter", _racy)):
        started = time.perf_counter()
        result = frontrun.explore(_counter_state, [worker, worker], lambda c: c.n == 2, preemption_bound=None,
                                  max_executions=100_000, total_timeout=300)
        out[name] = {"executions": result.num_explored, "found": not result.property_holds,
                     "exhausted": bool(result.exhausted), "seconds": time.perf_counter() - started}
    return out


class _CheckpointState:
    def __init__(self) -> None:
        from lightning.fabric.plugins import TorchCheckpointIO
        from lightning.pytorch.plugins.io.async_plugin import AsyncCheckpointIO

        self.directory = tempfile.mkdtemp(prefix="frontrun-side-")
        self.path = os.path.join(self.directory, "a.ckpt")
        self.io = AsyncCheckpointIO(TorchCheckpointIO())


def _save_remove_teardown(state: _CheckpointState) -> None:
    import torch

    state.io.save_checkpoint({"step": 1, "w": torch.zeros(4)}, state.path)
    state.io.remove_checkpoint(state.path)
    state.io.teardown()


def _gone(state: _CheckpointState) -> bool:
    leaked = os.path.exists(state.path)
    shutil.rmtree(state.directory, ignore_errors=True)
    return not leaked


def _checkpoint_race(frontrun, runs: int) -> dict:
    found, reproduced, attempts, executions, seconds = 0, 0, 0, [], 0.0
    for _ in range(runs):
        started = time.perf_counter()
        result = frontrun.explore(_CheckpointState, [_save_remove_teardown], _gone, preemption_bound=None,
                                  max_executions=2_000, total_timeout=120)
        seconds += time.perf_counter() - started
        executions.append(result.num_explored)
        if not result.property_holds:
            found += 1
            reproduced += result.reproduction_successes or 0
            attempts += result.reproduction_attempts or 0
    return {"runs": runs, "found": found, "reproduced": reproduced, "attempts": attempts,
            "executions": executions, "seconds": seconds}


def _peer_programs(frontrun) -> dict:
    """``peer_programs.PROGRAMS`` under frontrun's DPOR with no preemption bound: executions and seconds to the
    first violation (buggy programs) or to the end of its search (correct twins)."""
    import peer_programs

    out = {}
    for program in peer_programs.PROGRAMS:
        started = time.perf_counter()
        try:
            result = frontrun.explore(program.setup, list(program.workers), program.invariant, preemption_bound=None,
                                      max_executions=100_000, total_timeout=300, reproduce_on_failure=0)
            row = {"executions": result.num_explored, "found": not result.property_holds,
                   "exhausted": bool(result.exhausted)}
        except Exception as exc:  # noqa: BLE001 - reported in the table, as frontrun's own answer
            row = {"executions": 0, "found": False, "exhausted": False, "error": f"{type(exc).__name__}: {exc}"[:80]}
        row["seconds"] = time.perf_counter() - started
        out[program.name] = row
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    logging.disable(logging.CRITICAL)
    import frontrun

    out = {"version": getattr(frontrun, "__version__", "?"), **_counters(frontrun),
           "checkpoint_race": _checkpoint_race(frontrun, args.runs), "programs": _peer_programs(frontrun)}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
