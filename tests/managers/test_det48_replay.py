"""Issue 48 (det48): tokens replay exactly when memory is watched in forked ranks whose code starts threads.

What diverged: ``torch.multiprocessing``'s ``ProcessContext`` keys a dict on each rank's ``sentinel`` (a file
descriptor, the lowest free one, so it follows what the interpreter has open) and pops it as the rank ends; memory
watching names the item by its key, so the same schedule read ``dict#3[6]`` once and ``dict#3[9]`` when run again,
and a token's trace in a fresh process differed. A process of the run's sentinel is now named by its process
(``P1.sentinel``, ``racecheck.control.processes.handles``). The first test fails without that (the first
schedule's rerun differs at the pop); the second holds the token's replay, here and in a fresh process.

Also: item 3 (a storage_writer handed to DCP), and the sentinel's token when the warm-up fails before reaching code
a later schedule brings under watch (the token names those modules: ``racecheck.search.tokens``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore:torch.distributed is disabled:UserWarning")

import det48_programs  # noqa: E402  (tests/managers is on sys.path)
import racecheck  # noqa: E402

OPTIONS = {"memory": True, "fs": "posix"}
_FRESH = """
import json, sys
sys.path.insert(0, sys.argv[1])
import racecheck, det48_programs
failure = racecheck.replay(det48_programs.two_ranks_peeking, sys.stdin.read(), memory=True, fs="posix").failure
print(json.dumps(None if failure is None else [failure.message, failure.trace]))
"""


@pytest.fixture(scope="module")
def peeking():
    """pct with every schedule run twice and compared (check_determinism) until the peek is found."""
    return racecheck.explore(det48_programs.two_ranks_peeking, strategy="pct", schedules=20, seed=0,
                             check_determinism=True, **OPTIONS)


def test_every_schedule_runs_the_same_twice_until_the_bug_is_found(peeking):
    failure = peeking.failure
    assert failure is not None and failure.kind != "nondeterminism", failure and failure.message
    assert "while saving" in failure.message, failure.message


def test_the_token_replays_to_the_same_trace_here_and_in_a_fresh_process(peeking):
    failure = peeking.failure
    again = racecheck.replay(det48_programs.two_ranks_peeking, failure.token, **OPTIONS).failure
    assert again is not None and (again.message, again.trace) == (failure.message, failure.trace)
    here = os.path.dirname(__file__)
    out = subprocess.run([sys.executable, "-c", _FRESH, here], input=failure.token, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert json.loads(out.stdout.splitlines()[-1]) == [failure.message, failure.trace]


def test_a_storage_writer_handed_to_dcp_after_other_explorations():
    """Issue 48 item 3: ``async_save(..., storage_writer=...)`` asks ``isinstance(writer, AsyncStager)`` of a
    typing_extensions Protocol, which raised a TypeError under control after other explorations in one process
    (before typing_extensions became unwatched, ed7616b). Here, after explorations of other managers over DCP in the
    same process, the writer-passing manager runs clean (a TypeError would fail its schedules)."""
    from racecheck import scenarios

    def pct(spec, name, fs, seed):
        prepared = scenarios.get(name).build(scenarios.load_target(spec), fs)
        return racecheck.explore(prepared.fn, strategy="pct", schedules=2, seed=seed, **prepared.explore_kwargs)

    assert not pct("racecheck.scenarios.naive_managers:KempnerStyleManager", "manager-retention", "windows", 0).ok
    assert pct(scenarios.MANAGER_TARGET, "manager-crash", "posix", 0).ok
    for name, fs in (("manager-retention", "posix"), ("manager-crash", "windows")):
        result = pct("det48_programs:WriterArgManager", name, fs, 1)
        assert result.ok, result.failure


_FRESH_SENTINEL = """
import json, sys
import racecheck
from racecheck import scenarios
from racecheck.scenarios.managers import small_config
scenario = small_config(scenarios.get("manager-retention"), steps=(1, 2, 3), watcher_checks=3, sentinel=True)
prepared = scenario.build(scenarios.load_target("racecheck.scenarios.naive_managers:MegatronScanManager"), "posix")
failure = racecheck.replay(prepared.fn, sys.stdin.read(), **prepared.explore_kwargs).failure
print(json.dumps(None if failure is None else [failure.message, failure.trace]))
"""


def test_a_sentinel_token_replays_when_the_warm_up_fails_early():
    """The one-rank sentinel with memory watched: MegatronScanManager's failure. The warm-up fails before the
    manager's resume reaches ``torch.load``; a later schedule brings ``torch._tensor`` and others under watch (pickle
    calls ``Tensor.__reduce_ex__`` from C: no run of the token reaches them itself), so the failing schedule's save
    makes steps its replay would not make unless the token names those modules (``Token.modules``): replayed here
    and in a fresh process to the same message and trace."""
    from racecheck import scenarios
    from racecheck.scenarios.managers import small_config
    from racecheck.search.tokens import decode

    scenario = small_config(scenarios.get("manager-retention"), steps=(1, 2, 3), watcher_checks=3, sentinel=True)
    prepared = scenario.build(scenarios.load_target("racecheck.scenarios.naive_managers:MegatronScanManager"),
                              "posix")
    found = racecheck.explore(prepared.fn, strategy="pct", seed=0, shrink_budget=0, **prepared.explore_kwargs)
    assert found.failure is not None
    assert "torch._tensor" in decode(found.failure.token).modules
    again = racecheck.replay(prepared.fn, found.failure.token, **prepared.explore_kwargs).failure
    assert again is not None and (again.message, again.trace) == (found.failure.message, found.failure.trace)
    out = subprocess.run([sys.executable, "-c", _FRESH_SENTINEL], input=found.failure.token, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert json.loads(out.stdout.splitlines()[-1]) == [found.failure.message, found.failure.trace]
