"""Strategy conformance: every strategy of the registry keeps the promises every strategy makes.

Parametrized over ``racecheck.search.registry.ENTRIES``: a strategy added to the registry is checked here without
a line of this file naming it (as Hypothesis runs one conformance suite against every ``PrimitiveProvider``). On
the small programs of ``conformance_programs.py`` (racy and correct; named points, plain shared memory watched, the
fake filesystem, a timed wait, code that comes under memory watch mid-exploration), each strategy:

1. replays its own tokens: every failure's token, replayed in this process, fails the same way with the same
   trace byte for byte, and one token per strategy and racy program does so in a fresh process (one for all);
2. never reruns a schedule where it says it does not (systematic strategies, and the others while duplicates
   are skipped, the default): no two schedules of the exploration proper made the same decisions, a schedule run
   again because code came under memory watch while it ran counted exactly once;
3. is exhausted only when it is: an exploration that says so reached every interleaving, outcome and failure
   unbounded dfs finds (within the strategy's preemption bound, if it takes one: at its default, and at bounds 0
   and 1 for every entry that takes one: a bounded dpor that left a reversal untried claims nothing), and a budget
   smaller than the space is never called exhausted;
4. explores the same schedules under another ``PYTHONHASHSEED`` (two fresh processes, one digest per strategy).

The checks are functions of a registry entry (``conformance.py``); the planted tests at the end register a
strategy with a bug for each property on the fly and show that its check catches it.
"""

from __future__ import annotations

import functools
import random

import conformance
import pytest
from conformance import ConformanceError, Explored
from conformance_programs import BY_NAME, PROGRAMS
from racecheck import runtime
from racecheck.search import registry, schedule_loop
from racecheck.search.dfs import BoundedDFS, DFSChooser
from racecheck.search.random_walk import RandomChooser, RandomWalk
from racecheck.search.registry import StrategyEntry

BUDGET = 200  # schedules per exploration: every program's space but lost_update's fits (below sampling's 256)
SHORT = 10  # a budget smaller than lost_update's space, for every strategy and bound
HASH_SEEDS = ("0", "4021")
DIGESTED = ("lost_update", "memory_lost_update", "create_race", "late_reach")  # failures, memory, files, stale
DIGEST_BUDGET = 40

ENTRIES = pytest.mark.parametrize("entry", registry.ENTRIES, ids=[entry.name for entry in registry.ENTRIES])
RACY = [program for program in PROGRAMS if program.racy]


@functools.cache
def explored(entry: StrategyEntry, program: str, schedules: int = BUDGET, **options: object) -> Explored:
    """One exploration per entry, program, budget and options, shared by the checks."""
    return conformance.observe(entry, BY_NAME[program], schedules, **options)


# 1. It replays its own tokens ------------------------------------------------------------------------------------


@ENTRIES
def test_replays_its_own_tokens(entry):
    for program in RACY:
        found = explored(entry, program.name)
        assert conformance.check_replays_its_tokens(found) >= 1, f"{found.what}: no failure, no token to replay"


def test_its_tokens_replay_in_a_fresh_process():
    cases = [(explored(entry, program.name), 0) for entry in registry.ENTRIES for program in RACY]
    conformance.check_replays_elsewhere(cases)


# 2. It never reruns a schedule where it says it does not ---------------------------------------------------------


@ENTRIES
def test_never_reruns_a_schedule(entry):
    for program in PROGRAMS:
        found = explored(entry, program.name)
        assert conformance.promises_no_rerun(found)  # every strategy does, at its defaults
        conformance.check_never_reruns(found)
    # a systematic strategy promises it whether or not duplicates are skipped: the steering is not what keeps it
    unsteered = explored(entry, "lost_update_fixed", skip_duplicates=False)
    assert conformance.promises_no_rerun(unsteered) == entry.systematic
    conformance.check_never_reruns(unsteered)
    late = explored(entry, "late_reach")
    if late.result.interleavings > 1:  # it reached the branch the warm-up did not: that run was stale, run again
        assert len(late.thrown) == 1 and late.thrown[0].stale, late.what


# 3. It is exhausted only when it is ------------------------------------------------------------------------------


@ENTRIES
def test_exhausted_only_when_it_is(entry):
    exhausted = [program.name for program in PROGRAMS
                 if conformance.check_exhausted_only_when_it_is(explored(entry, program.name))]
    # every strategy is systematic or steered away from what it ran, so the small spaces end within the budget
    assert set(exhausted) >= {program.name for program in PROGRAMS} - {"lost_update"}, exhausted


BOUNDED = [entry for entry in registry.ENTRIES if "preemption_bound" in entry.options]
# dpor's reduction and a preemption bound do not compose exactly (docs/dependency.md): bounded, its search can end
# short of the classes within the bound (at bound 0, order_violation, which fails with no preemption when the reader
# runs first at the main thread's join, ran 1 class of 2 and passed, where dfs at bound 0 finds the failure). It
# used to call that exhausted; a bounded dpor that left a reversal untried now claims nothing, which this checks.


@pytest.mark.parametrize("bound", [0, 1])
@pytest.mark.parametrize("entry", BOUNDED, ids=lambda entry: entry.name)
def test_exhausted_within_a_bound_only_when_it_is(entry, bound):
    """A strategy given a preemption bound that says it is exhausted claims the schedules within it: every
    interleaving, outcome and failure that unbounded dfs reaches with at most that many preemptions. dfs's bound is
    exact, so it ends these small spaces with that proof; a bounded dpor may end without one."""
    for name in ("order_violation", "lock_order_deadlock", "lost_update_fixed", "create_race"):
        found = explored(entry, name, preemption_bound=bound)
        claimed = conformance.check_exhausted_only_when_it_is(found)
        assert claimed or entry.name != "dfs", found.what


def test_a_bounded_dpor_that_left_a_reversal_untried_claims_nothing():
    """order_violation at bound 0: the race's reversal costs a preemption where dpor places it, so the bound drops it
    and the failure dfs finds at bound 0 goes unseen; dpor ends its search without calling that exhausted."""
    dpor = registry.entry("dpor")
    found = explored(dpor, "order_violation", preemption_bound=0)
    assert found.result.ok and not found.result.exhausted and found.result.schedules < 50
    assert not explored(registry.entry("dfs"), "order_violation", preemption_bound=0).result.ok


@ENTRIES
def test_a_space_larger_than_the_budget_is_not_exhausted(entry):
    found = explored(entry, "lost_update", SHORT)
    whole, _outcomes = conformance.reference(found.program, **found.options).within(found.bound)
    assert len(whole) > SHORT  # SHORT schedules cannot reach every interleaving
    assert not conformance.check_exhausted_only_when_it_is(found)


# 4. It explores the same schedules under another PYTHONHASHSEED --------------------------------------------------


class Salted(RandomWalk):
    """Planted (property 4): a random walk seeded with ``hash()`` of its text, which differs between processes."""

    def new_execution(self, index, sampled=False):
        return RandomChooser(random.Random(hash(f"random:{self.seed}:{index}")))


SALTED = StrategyEntry("random", __name__, "Salted", (), "planted: seeded by hash() of a string")


@pytest.fixture(scope="module")
def digests() -> list[list[str]]:
    """Per hash seed, a digest per registered entry and then the planted one, each from a fresh process."""
    entries = [*registry.ENTRIES, SALTED]
    return [conformance.digests_under(seed, entries, DIGESTED, DIGEST_BUDGET) for seed in HASH_SEEDS]


@ENTRIES
def test_same_schedules_under_another_hash_seed(entry, digests):
    at = registry.ENTRIES.index(entry)
    assert digests[0][at] == digests[1][at], f"{entry.name} explored other schedules under another PYTHONHASHSEED"


def test_planted_a_strategy_seeded_by_hash_explores_other_schedules_under_another_hash_seed(digests):
    assert digests[0][-1] != digests[1][-1]


# Planted bugs: each property's check fails on a strategy that breaks it ------------------------------------------


class ImpatientChooser(RandomChooser):
    def pick_thread(self, decision):
        for rec in runtime.current_run().threads:  # planted: it reaches past what it is handed
            if rec.deadline is not None and not rec.finished:
                rec.timed_out = True  # the wait ends now, as if its time had passed
        return super().pick_thread(decision)


class Impatient(RandomWalk):
    """Planted (property 1): a random walk that times every timed wait out at its decisions, to reach timeouts
    sooner. It acts on the run other than through its picks, so a replay of its decisions runs another way."""

    def new_execution(self, index, sampled=False):
        return ImpatientChooser(self.stream(f"random:{self.seed}:{index}"))


def test_planted_a_strategy_acting_outside_its_picks_fails_the_replay_check():
    entry = StrategyEntry("random", __name__, "Impatient", (), "planted: times waits out itself")
    found = conformance.observe(entry, BY_NAME["timed_handoff"], 40)
    assert found.result.failures  # only its own runs time the wait out
    with pytest.raises(ConformanceError, match="timed_handoff: token .* (passes when replayed|does not replay)"):
        conformance.check_replays_its_tokens(found)


class Stutter(BoundedDFS):
    """Planted (property 2): dfs that hands its first schedule out again as its second."""

    def new_execution(self, index, sampled=False):
        return DFSChooser([]) if index == 1 else super().new_execution(index, sampled)


@pytest.mark.parametrize("program", ["lost_update_fixed", "late_reach"])
def test_planted_a_systematic_strategy_that_reruns_a_schedule_fails_the_rerun_check(program):
    """On late_reach too, where a schedule is run again legitimately (code came under watch): the stale rerun is
    accounted for, and the planted one is still caught."""
    entry = StrategyEntry("dfs", __name__, "Stutter", ("preemption_bound",), "planted: reruns schedule 0",
                          systematic=True)
    found = conformance.observe(entry, BY_NAME[program], BUDGET)
    assert bool(found.thrown) == (program == "late_reach")
    with pytest.raises(ConformanceError, match=f"on {program}: schedule 1 reran schedule 0"):
        conformance.check_never_reruns(found)


def test_planted_a_schedule_run_again_though_nothing_came_under_watch_fails_the_account(monkeypatch):
    """Only a run that brought code under memory watch may be run again as the same schedule: a loop that drops
    the first schedule's run and asks the strategy for that index again is caught by ``observe``'s account."""
    real = schedule_loop.Schedules.after
    dropped = []

    def after(self, run):
        if not dropped:
            dropped.append(run)
            return True  # neither counted nor handed on: the same index is asked for again
        return real(self, run)

    monkeypatch.setattr(schedule_loop.Schedules, "after", after)
    with pytest.raises(ConformanceError, match="schedule 0 was run 2 times.*attempts \\[0\\] were not stale"):
        conformance.observe(registry.BY_NAME["dfs"], BY_NAME["lost_update_fixed"], BUDGET)


def test_planted_a_sampler_registered_as_systematic_fails_the_rerun_check():
    """Registered as systematic, a random walk runs without the coverage layer's steering, and repeats itself."""
    entry = StrategyEntry("dfs", "racecheck.search.random_walk", "RandomWalk", (), "planted", systematic=True)
    found = conformance.observe(entry, BY_NAME["lost_update_fixed"], 60)
    with pytest.raises(ConformanceError, match="reran schedule"):
        conformance.check_never_reruns(found)


class Hasty(BoundedDFS):
    """Planted (property 3): dfs that says it is done after five schedules, wherever it is."""

    def end_execution(self, chooser, steps):
        super().end_execution(chooser, steps)
        self.ended = getattr(self, "ended", 0) + 1
        self.exhausted = self.exhausted or self.ended >= 5


class Capped(BoundedDFS):
    """Planted (property 3): dfs that ignores the bound it is given and keeps to one preemption."""

    def __init__(self, seed=0, preemption_bound=None):
        super().__init__(seed, preemption_bound=1)


@pytest.mark.parametrize("entry", [
    StrategyEntry("dfs", __name__, "Hasty", ("preemption_bound",), "planted: done after 5", systematic=True),
    StrategyEntry("dpor", __name__, "Capped", ("preemption_bound",), "planted: bound 1 whatever it is given",
                  systematic=True, defaults=(("preemption_bound", None),)),
], ids=["done-early", "ignores-its-bound"])
def test_planted_a_strategy_that_claims_exhaustion_early_fails_the_exhaustion_check(entry):
    found = conformance.observe(entry, BY_NAME["lost_update"], BUDGET)
    assert found.result.exhausted
    with pytest.raises(ConformanceError, match="lost_update: exhausted after .* never reached"):
        conformance.check_exhausted_only_when_it_is(found)
