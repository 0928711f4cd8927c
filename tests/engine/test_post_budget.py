"""Post-failure work bounded and proportional (issue 47, item 1): shrinking and the racing pair's search run within a
budget in steps that scales with what finding the failure cost, with a floor that leaves small programs their full
shrink; where a phase stops on it, the failure, its printed block and results.json say so."""

import re
import threading

import racecheck
from classic_bugs import lost_update
from racecheck.frontends.parallel import failure_record
from racecheck.report.results import failure_dict
from racecheck.search.post_budget import FLOOR, PROBE_FLOOR, WorkBudget


class SpinLock:
    def __init__(self) -> None:
        self.held = False
        self.count = 0
        self.waits = 0

    def work(self) -> None:
        for _ in range(2):
            while self.held:  # spins: a probe that lets it spin runs until its cap
                # counting its turns makes each one write: no busy-wait a replay hands over from (``busy_wait``,
                # which only reads qualify for), so the probes that let it spin still run to their cap
                self.waits += 1
            self.held = True  # test-and-set, not atomic
            seen = self.count
            self.count = seen + 1
            self.held = False


def spin_lock() -> None:
    lock = SpinLock()
    threads = [threading.Thread(target=lock.work) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert lock.count == 4, lock.count


def test_a_budget_counts_steps_from_its_start_and_remembers_running_out():
    steps = [100]
    budget = WorkBudget(lambda: steps[0], found=10, share=20, floor=0)
    assert budget.more() and budget.left == 20 and not budget.cut
    steps[0] += 25
    assert not budget.more() and budget.cut and budget.left == 0
    assert WorkBudget(lambda: 0, found=10, share=20).limit == FLOOR


def test_a_spinning_program_is_reported_at_once_and_says_its_shrink_was_cut_short():
    result = racecheck.explore(spin_lock, strategy="random", seed=0, schedules=50)
    failure = result.failure
    assert failure is not None and failure.race is not None, result.verdict()
    assert any(note.startswith("shrinking cut short") for note in failure.notes), failure.notes
    assert failure.notes[0] in str(failure)
    record = failure_record(failure)
    assert failure_dict(record)["notes"] == failure.notes
    again = racecheck.replay(spin_lock, failure.token)
    assert again.failure is not None and again.failure.trace == failure.trace


def test_a_spinning_programs_shrink_stops_near_its_budget_of_the_find_or_the_floor():
    """The shrink of a failure found in a few hundred steps runs what the floor allows, not the 20,000 steps it
    once had: its note says the steps it ran, the budget (the find's steps or the floor, whichever is more) and the
    find's, and it overran the budget by less than one capped probe."""
    failure = racecheck.explore(spin_lock, strategy="random", seed=0, schedules=50).failure
    assert failure is not None
    note = next(note for note in failure.notes if note.startswith("shrinking cut short"))
    spent, limit, found = map(int, re.search(r"\((\d+) steps run, the budget (\d+) steps \(finding it took (\d+)\)",
                                             note).groups())
    assert limit == max(FLOOR, found) and found < FLOOR, note
    assert limit <= spent < limit + PROBE_FLOOR, note


def test_a_small_program_keeps_its_full_shrink_and_pair_without_notes():
    failure = racecheck.explore(lost_update, strategy="pct", seed=0, schedules=200).failure
    assert failure is not None and failure.race is not None
    assert failure.notes == []


def test_a_failures_probes_and_swaps_get_no_data_race_finder_unless_a_data_race_fails_runs(monkeypatch):
    """Shrink probes and racing-pair swaps are never read for data races under ``data_races="report"``, so they run
    without the finder (about a sixth of a watched step's engine work): an exploration that shrinks and names the pair
    makes as many finders as the same one without either, and reports the same races. Under ``"fail"`` a probe's
    data race may be the failure it must reproduce, so every probe gets one."""
    from racecheck.search.data_race_sink import DataRaceSink

    made = [0]
    real_init = DataRaceSink.__init__

    def counting(self, *args, **kwargs):
        made[0] += 1
        real_init(self, *args, **kwargs)

    monkeypatch.setattr(DataRaceSink, "__init__", counting)

    def explore(**options):
        made[0] = 0
        result = racecheck.explore(lost_update, strategy="pct", seed=0, schedules=200, **options)
        return result, made[0]

    bare, bare_finders = explore(shrink_budget=0, race_budget=0)
    full, full_finders = explore()
    assert full.failure is not None and full.failure.race is not None and full.failure.shrink_probes > 0
    assert full_finders == bare_finders
    assert [race.describe() for race in full.data_races] == [race.describe() for race in bare.data_races]
    failing, failing_finders = explore(data_races="fail")
    assert failing.failure is not None and failing.failure.shrink_probes > 0
    _, failing_bare = explore(data_races="fail", shrink_budget=0, race_budget=0)
    assert failing_finders >= failing_bare + failing.failure.shrink_probes
