"""DCP's process-based async save under control (issue 48): its daemon is a process of the run, its pipe traffic
scheduling points. Every schedule starts one or two daemons (forked from a warm template, children or
grandchildren of the run; the template imports torch once per exploration) and watches torch's checkpoint code in
every process: a minute or two per module's worth, so these run under ``-m slow``; the engine checks they rest on
(a leaked daemon, a spawned child on a served pipe) are fast, in ``test_leaks.py``."""

import os
import subprocess
import sys
import textwrap

import dcp_programs as programs
import pytest
import racecheck

HERE = os.path.dirname(os.path.abspath(__file__))
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def two_daemons():
    """torch's executor with default options (pct), explored once for the module's tests."""
    return racecheck.explore(programs.two_saves)


def test_two_daemons_on_one_rank_are_found_with_default_options(two_daemons):
    failure = two_daemons.failure
    assert failure is not None, two_daemons
    assert failure.message == ("AssertionError: 2 checkpoint daemons on one rank (DCP keeps one per process)"), failure
    assert two_daemons.processes == 3  # the trainer and its two daemons
    assert failure.depends_on_schedule is not False  # a race: some schedules start one daemon only
    races = {race.obj for race in two_daemons.data_races}
    assert "global torch.distributed.checkpoint._async_process_executor._CHECKPOINT_PROCESS" in races


def test_the_token_replays_in_a_fresh_process(two_daemons, tmp_path):
    failure = two_daemons.failure
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {HERE!r})
        import dcp_programs as programs, racecheck
        if __name__ == "__main__":
            result = racecheck.replay(programs.two_saves, {failure.token!r}, race_budget=0)
            sys.stdout.write("MESSAGE " + result.failure.message + "\\n" + "TRACE\\n" + result.failure.trace)
    """)
    path = tmp_path / "replay.py"  # a file with a main guard: the spawned daemon imports the main module
    path.write_text(script)
    out = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=900,
                         env=dict(os.environ, PYTHONHASHSEED="4321")).stdout
    assert f"MESSAGE {failure.message}\n" in out, out[-2000:]
    assert out.split("TRACE\n", 1)[1] == failure.trace


def test_the_locked_executor_starts_one_daemon():
    result = racecheck.explore(programs.two_saves_locked, schedules=10)
    assert result.ok, result.failure
    assert result.processes == 2


@pytest.fixture(scope="module")
def two_ranks():
    """Two ranks (spawned), each rank's daemon a grandchild of the run (spawned by the rank's executor thread,
    forked from the exploration's warm template: ``grand_warm``). Default options: found, shrunk, the pair
    searched for, in about a minute here."""
    return racecheck.explore(programs.two_ranks)


def test_two_ranks_diverge_in_their_collectives(two_ranks):
    """Rank 0 enters the second save's port broadcast (it saw no daemon yet); rank 1 saw its daemon and skipped
    it, so its daemon waits in the optimizer's save for rank 0's daemon, which never gets the request."""
    failure = two_ranks.failure
    assert failure is not None and failure.kind == "deadlock", failure
    message = failure.message
    assert "broadcast_object_list #1 on WORLD (rank 0) @torch/distributed/checkpoint/utils.py" in message, message
    assert "on W2.WORLD (rank 1)" in message, message  # rank 1's daemon, in the daemons' own world
    assert two_ranks.processes == 5  # the root, two ranks, a daemon each
    assert "(child of P1)" in failure.trace and "(child of P2)" in failure.trace
    assert failure.shrink_probes > 0  # shrinking ran (default options)
    said = failure.race is not None or any(note.startswith("racing pair left unnamed: ") for note in failure.notes)
    assert said, failure.notes  # the racing pair, or why it is not named


def test_the_two_ranks_token_replays_in_a_fresh_process(two_ranks, tmp_path):
    failure = two_ranks.failure
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {HERE!r})
        import dcp_programs as programs, racecheck
        if __name__ == "__main__":
            result = racecheck.replay(programs.two_ranks, {failure.token!r}, race_budget=0)
            sys.stdout.write("MESSAGE " + result.failure.message + "\\n" + "TRACE\\n" + result.failure.trace)
    """)
    path = tmp_path / "replay.py"
    path.write_text(script)
    out = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=900,
                         env=dict(os.environ, PYTHONHASHSEED="4321")).stdout
    assert f"MESSAGE {failure.message}\n" in out, out[-2000:]
    assert out.split("TRACE\n", 1)[1] == failure.trace
