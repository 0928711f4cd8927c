"""An exploration whose runs stop a thread inside torch's zip writer finishes: it once terminated the whole process
(C++ ``std::terminate``) at pct seeds 0 and 1 of ``manager-crash`` on a manager that writes with DCP. racecheck's
``Abort`` was raised at a write inside ``torch.save`` and again at the write of ``__exit__``'s ``write_end_of_file``,
so the writer never marked itself finished, and its destructor wrote its end of file again when the frames were
collected between runs, into a stream closed as the thread was unwound. A thread whose cleanup is cut short now
keeps its frames for the life of the process (``runtime.records.unwind``). In a child process, so a regression
cannot take the test worker with it."""

import pathlib
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("torch")

PROGRAM = textwrap.dedent("""
    import sys
    sys.path.insert(0, {here!r})
    import racecheck
    from racecheck import scenarios
    if __name__ == "__main__":
        target = scenarios.load_target("thread_writer_manager:NotDurableManager")
        prepared = scenarios.get("manager-crash").build(target, "posix")
        result = racecheck.explore(prepared.fn, strategy="pct", schedules=40, seed={seed}, shrink_budget=10,
                                   **prepared.explore_kwargs)
        print("finished", result.ok, result.failure is not None and "after a power loss" in result.failure.message)
""")


@pytest.mark.parametrize("seed", [1])  # seed 0 runs in-process in test_managers
def test_manager_crash_exploration_on_a_dcp_writer_finishes_without_terminating(tmp_path, seed):
    script = tmp_path / "crash_seed.py"
    script.write_text(PROGRAM.format(here=str(pathlib.Path(__file__).parent), seed=seed))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "finished False True" in done.stdout, (done.stdout, done.stderr[-2000:])
