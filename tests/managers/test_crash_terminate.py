"""Known bug, kept visible: an exploration of ``manager-crash`` on a manager that writes with DCP terminates the
whole process at pct seeds 0 and 1 (C++ ``std::terminate``): torch's ``PyTorchStreamWriter`` destructor writes its
end of file into a stream that was closed as the thread was unwound, when the frames are collected between runs
(``collect_between_runs``). Seen in a run stopped at the step limit: racecheck's ``Abort`` is raised at a write
inside ``torch.save``, then again at the write of ``__exit__``'s ``write_end_of_file``, so the writer never marks
itself finished. Run in a child process so the abort cannot take the test worker with it; a strict xfail until
it is fixed."""

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
        result = racecheck.explore(prepared.fn, strategy="pct", schedules=40, seed=1, shrink_budget=10,
                                   **prepared.explore_kwargs)
        print("finished", result.ok)
""")


@pytest.mark.xfail(strict=True, reason="a crash run's torch writer is finalized against a closed stream: terminate")
def test_manager_crash_exploration_on_a_dcp_writer_finishes_without_terminating(tmp_path):
    script = tmp_path / "crash_seed1.py"
    script.write_text(PROGRAM.format(here=str(__import__("pathlib").Path(__file__).parent)))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "finished" in done.stdout, done.stderr[-2000:]
