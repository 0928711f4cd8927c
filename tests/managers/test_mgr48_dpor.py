"""dpor over DCP's real thread-based async_save: the fixed manager's space (DCP's own fsyncs off, its own kept)
on the small configuration (two saves, keep_last_n=1, the instant check after every call and at the end, the leak
check, memory=False) is exhausted once DCP's filesystem writer, whose queues only the saving thread touches, is
kept real (dcp_state.PROOF_EXCLUDE); the same configuration finds the KempnerForge-style manager. Controlled, that
module's drained queues end in yields that conflict with every step: 5,000 schedules did not exhaust it."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore:torch.distributed is disabled:UserWarning")

import racecheck  # noqa: E402
from racecheck import scenarios  # noqa: E402
from racecheck.fixed_impl.dcp_state import PROOF_EXCLUDE  # noqa: E402
from racecheck.scenarios.managers import small_config  # noqa: E402


def _dpor(spec, exclude=PROOF_EXCLUDE, **kwargs):
    scenario = small_config(scenarios.get("manager-retention"), steps=(1, 2), watcher_checks=0)
    prepared = scenario.build(scenarios.load_target(spec), "posix")
    return racecheck.explore(prepared.fn, strategy="dpor", **{**prepared.explore_kwargs, "memory": False,
                                                               "exclude": list(exclude), **kwargs})


NOSYNC = "mgr48_dcp_managers:DurableNoSyncManager"  # the fixed manager, DCP's own fsyncs off


def test_dpor_exhausts_the_fixed_manager_over_real_dcp():
    result = _dpor(NOSYNC, schedules=3000)
    assert result.ok, result.failure
    assert result.exhausted, f"not exhausted in {result.schedules} schedules"
    assert any("torch.distributed.checkpoint.filesystem" in line for line in result.coverage.escaped)


def test_the_same_proof_configuration_finds_the_kempnerforge_style_manager():
    result = _dpor("mgr48_dcp_managers:KempnerNoSyncManager", schedules=3000, shrink_budget=0)
    assert not result.ok and "names a checkpoint that is not complete" in result.failure.message


def test_without_the_exclusion_dpor_does_not_exhaust_it_in_the_same_budget():
    """What the exclusion buys (and that the proof is not free): the controlled queues' yields."""
    result = _dpor(NOSYNC, exclude=(), schedules=200)
    assert result.ok and not result.exhausted
