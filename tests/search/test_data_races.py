"""Data races (``racecheck.search.data_races``): conflicting accesses no synchronisation orders are reported from
every schedule explored, passing or failing, each once, with both threads, operations and lines; the same
accesses ordered by any kind of synchronisation are not; ``data_races="fail"`` fails the schedule replayably,
``"ignore"`` is silent, ``benign=`` marks one intended race. And every verdict says what it covered."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import racecheck
from racecheck.search import data_races
from racecheck.search.data_races import DataRace, object_kind

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import race_programs  # noqa: E402


def _line(fn, text: str) -> str:
    """``race_programs.py:N``, the line of ``fn`` holding ``text``."""
    lines, first = inspect.getsourcelines(fn)
    for offset, line in enumerate(lines):
        if text in line:
            return f"race_programs.py:{first + offset}"
    raise AssertionError(f"{text!r} not in {fn.__name__}")


def _ends(location: str, expected: str) -> bool:
    return location == expected or location.endswith("/" + expected)


@pytest.mark.parametrize("strategy", ["pct", "dpor"])
def test_a_counter_race_is_reported_with_both_lines_though_the_test_passes(strategy):
    result = racecheck.explore(race_programs.counter, strategy=strategy, schedules=30)
    assert result.ok  # the test asserts nothing: only the race report says something is wrong
    line = _line(race_programs.counter, "box.value += 1")
    assert result.data_races, result.summary()
    for race in result.data_races:
        assert race.obj == "Box#1.value" and not race.benign
        assert {race.first.thread, race.second.thread} == {"T1", "T2"}
        assert _ends(race.first.location, line) and _ends(race.second.location, line)
        assert "write" in (race.first.op, race.second.op)
        assert race.token.startswith("rc1.") and race.schedule >= 0
    ops = sorted(tuple(sorted((r.first.op, r.second.op))) for r in result.data_races)
    assert ops == [("read", "write"), ("write", "write")]  # each pair once, however many schedules showed it
    summary = result.summary()
    assert "data races: 2" in summary and result.data_races[0].describe() in summary
    assert f"T1 write @{result.data_races[0].first.location}" in result.data_races[0].describe()


@pytest.mark.parametrize("program", [race_programs.locked_counter, race_programs.module_locked_counter],
                         ids=["lock", "lock-made-before-the-run"])
def test_the_locked_twin_has_no_data_race(program):
    result = racecheck.explore(program, strategy="dpor", schedules=200)
    assert result.ok and result.exhausted
    assert result.data_races == [] and "data race" not in result.summary()


@pytest.mark.parametrize("kind", sorted(race_programs.ORDERED))
def test_no_false_positive_through_each_kind_of_synchronisation(kind):
    result = racecheck.explore(race_programs.ORDERED[kind], strategy="dpor", schedules=300)
    assert result.ok and result.exhausted, result.summary()
    assert result.data_races == [], [race.describe() for race in result.data_races]


def test_unordered_twin_of_a_hand_off_is_reported():
    """The analysis does see the hand-offs' accesses: with the queue's get taken away the same accesses race."""

    def unordered() -> None:
        box = race_programs.Box()
        race_programs.pair(lambda: setattr(box, "value", 1), lambda: box.value)

    result = racecheck.explore(unordered, strategy="dpor", schedules=50)
    assert [(r.obj, r.first.op, r.second.op) for r in result.data_races] in (
        [("Box#1.value", "write", "read")], [("Box#1.value", "read", "write")])


def test_fail_fails_the_schedule_and_its_token_replays_the_failure_in_a_fresh_process():
    result = racecheck.explore(race_programs.counter, strategy="pct", schedules=30, data_races="fail")
    assert not result.ok and result.failure.kind == "data-race"
    line = _line(race_programs.counter, "box.value += 1")
    assert "Box#1.value" in result.failure.message and line in result.failure.message
    token = result.failure.token
    here = racecheck.replay(race_programs.counter, token)  # no option: the token says data races fail
    assert here.failure is not None and here.failure.kind == "data-race"
    assert here.failure.message == result.failure.message and here.trace == result.failure.trace
    script = textwrap.dedent(
        f"""
        import json, sys
        sys.path.insert(0, {str(HERE)!r})
        import racecheck, race_programs
        again = racecheck.replay(race_programs.counter, {token!r})
        print(json.dumps([again.failure.kind, again.failure.message, again.trace]))
        """
    )
    env = dict(os.environ, PYTHONHASHSEED="99")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    kind, message, trace = json.loads(out.stdout.strip().splitlines()[-1])
    assert (kind, message, trace) == ("data-race", result.failure.message, result.failure.trace)


def test_fail_leaves_a_race_free_program_passing():
    result = racecheck.explore(race_programs.locked_counter, strategy="dpor", data_races="fail")
    assert result.ok and result.exhausted


def test_ignore_is_silent():
    result = racecheck.explore(race_programs.counter, strategy="dpor", data_races="ignore")
    assert result.ok and result.data_races == [] and "data race" not in result.summary()


def test_benign_marks_exactly_the_named_race():
    result = racecheck.explore(race_programs.two_races, strategy="dpor", benign=["Stats.hits"])
    by_object = {}
    for race in result.data_races:
        by_object.setdefault(race.obj, set()).add(race.benign)
    assert by_object == {"Stats#1.hits": {True}, "Box#1.value": {False}}
    assert "Box#1.value" in result.summary() and "Stats#1.hits" not in result.summary()
    assert "marked benign" in result.summary()
    failing = racecheck.explore(race_programs.two_races, strategy="dpor", benign=["Stats.hits"], data_races="fail")
    assert not failing.ok and "Box#1.value" in failing.failure.message
    quiet = racecheck.explore(race_programs.stats_only, strategy="dpor", benign=["Stats.hits"], data_races="fail")
    assert quiet.ok and all(race.benign for race in quiet.data_races) and quiet.data_races


def test_benign_by_source_line():
    line = _line(race_programs.two_races, "stats.hits += 1")
    result = racecheck.explore(race_programs.two_races, strategy="dpor", benign=[line])
    assert {r.obj for r in result.data_races if r.benign} == {"Stats#1.hits"}
    assert {r.obj for r in result.data_races if not r.benign} == {"Box#1.value"}


def test_data_race_options_are_checked():
    with pytest.raises(ValueError, match="data_races must be one of"):
        racecheck.Config(data_races="warn")
    with pytest.raises(TypeError, match="benign must be"):
        racecheck.Config(benign=[3])
    assert racecheck.Config(benign="Stats.hits").benign == ("Stats.hits",)


def test_reporting_data_races_changes_no_schedule():
    """The report reads the runs, never steers them: the same schedules and interleavings, the same failure and
    token, whether races are reported or ignored."""

    def explored(program, mode):
        digests = []
        result = racecheck.explore(program, strategy="random", schedules=25, seed=3, data_races=mode,
                                   skip_duplicates=False, progress=lambda snap: digests.append(snap.schedule))
        token = result.failure.token if result.failure else None
        return digests, result.schedules, result.interleavings, token

    for program in (race_programs.two_races, race_programs.lost_update):
        assert explored(program, "ignore") == explored(program, "report")


def test_dedup_is_by_object_kind_and_lines_not_identity():
    assert object_kind("Counter#2.value") == object_kind("Counter@T1#1.value") == "Counter.value"
    assert object_kind("dict#2['k']") == "dict[...]" and object_kind("file /tmp/a/b.json") == "file"
    a = DataRace("Counter#1.value", data_races.RaceAccess("T1", "write", "x.py:3", 4),
                 data_races.RaceAccess("T2", "read", "x.py:2", 6), 0, "tok")
    b = DataRace("Counter#7.value", data_races.RaceAccess("T2", "read", "x.py:2", 9),
                 data_races.RaceAccess("T3", "write", "x.py:3", 11), 5, "tok2")
    assert a.key() == b.key()
    assert DataRace.from_dict(json.loads(json.dumps(a.to_dict()))) == a


def test_engine_objects_are_never_reported():
    """The executor's bookkeeping, the virtual clock and fair scheduling order nothing and race nothing: two work
    items that sleep and poll race on the program's counter only."""
    result = racecheck.explore(race_programs.pool_counter, strategy="pct", schedules=40)
    assert result.data_races, result.summary()
    assert {race.obj for race in result.data_races} == {"Box#1.value"}


# ----- what a verdict covered --------------------------------------------------------------------------------------


def test_a_sampled_run_says_it_sampled():
    result = racecheck.explore(race_programs.counter, strategy="pct", schedules=3, skip_duplicates=False)
    scope = result.coverage
    assert scope.space == "sampled" and not result.exhausted
    text = scope.text()
    assert "a sample of the schedule space (pct: 3 schedules" in text and "not exhausted" in text
    assert "plain memory" in text and "files on the real disk" in text and "escaped: nothing seen" in text
    assert text in result.summary()


def test_an_exhausted_dpor_run_says_every_interleaving():
    result = racecheck.explore(race_programs.locked_counter, strategy="dpor")
    scope = result.coverage
    assert scope.space == "exhausted" and scope.bound is None and result.exhausted
    assert "every interleaving of what was watched (dpor, no bound, exhausted" in scope.text()
    bounded = racecheck.explore(race_programs.locked_counter, strategy="dfs", preemption_bound=1)
    assert "every schedule with at most 1 preemption (dfs, exhausted within the bound" in bounded.coverage.text()


def test_memory_off_and_files_say_what_was_not_watched():
    result = racecheck.explore(race_programs.locked_counter, strategy="dpor", memory=False)
    assert "no plain memory (memory=False)" in result.coverage.text() and not result.coverage.memory
    faked = racecheck.explore(race_programs.locked_counter, strategy="dpor", fs="posix")
    assert "files on the fake fs (posix)" in faked.coverage.text()


def test_what_escaped_is_named():
    result = racecheck.explore(race_programs.module_locked_counter, strategy="dpor", exclude=["json"])
    text = result.coverage.text()
    assert "real locks made before the run" in text and "modules left real by exclude= (json)" in text


def test_a_replay_covers_one_schedule():
    result = racecheck.explore(race_programs.counter, strategy="pct", schedules=5, data_races="fail")
    again = racecheck.replay(race_programs.counter, result.failure.token)
    assert again.coverage.space == "replayed" and "covered: one replayed schedule" in again.summary()


def test_a_file_written_by_two_threads_is_a_data_race_and_its_locked_twin_is_not():
    result = racecheck.explore(race_programs.file_writers, strategy="dpor", fs="posix", schedules=200)
    files = [race for race in result.data_races if race.obj.startswith("file ")]
    assert files, result.summary()
    line = _line(race_programs.file_writers, "the racing open")
    assert all(race.obj.endswith("/state.json") for race in files)
    assert any(_ends(race.first.location, line) and _ends(race.second.location, line) for race in files)
    locked = racecheck.explore(race_programs.locked_file_writers, strategy="dpor", fs="posix", schedules=200)
    assert locked.ok and locked.exhausted and locked.data_races == [], locked.summary()


def _fake_run(pair: int) -> object:
    """A run without source lines whose one race is a known kind on a pair of accesses not seen before."""
    from types import SimpleNamespace

    from racecheck.runtime.access import memory

    found = (memory(f"Box#{pair}.value"), (1, "write", "", 3, pair), (2, "read", "", 5, pair))
    return SimpleNamespace(locate=False, found=[found], memory_steps=SimpleNamespace(real_sync=None, sampled=False))


def _located_runs(runs: int) -> int:
    """How many of ``runs`` schedules, each showing a new pair of one known kind, the log asks to run again with
    source lines (as the schedule loop does: each rerun counted, then the run's races taken)."""
    log = data_races.RaceLog(racecheck.Config().parts().search)
    located = 0
    for index in range(runs):
        run = _fake_run(index)
        wanted = log.wants_locations(run, run.found)
        if wanted:
            log.reruns += 1
            located += 1
            run.locate = True
        log.add(run, run.found, index, lambda: "token")
    return located


def test_reruns_for_new_pairs_of_a_known_kind_are_one_per_eight_schedules_and_sixteen_in_all():
    # the first schedule's race is a new kind: always located; each later new pair costs a whole run, so at most
    # one per RERUN_EVERY schedules (a small Trainer.fit showed a new pair in each of its 10 schedules) and RERUNS
    assert (data_races.RERUN_EVERY, data_races.RERUNS) == (8, 16)
    assert _located_runs(1) == 1  # the new kind
    assert _located_runs(10) == 2  # and schedule 8's new pair
    assert _located_runs(40) == 5  # schedules 0, 8, 16, 24, 32
    assert _located_runs(1000) == 16  # the budget: 16 reruns in all, the new kind's among them
