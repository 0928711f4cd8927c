"""Lightning's own flaky ``test_async_checkpoint_plugin``, unmodified but for the marker (``fs="posix"``, no module
named), fails every time on stock Lightning under the plugin, the printed command replays the same trace in another
process, and the same test passes with racecheck's ``LockedAsyncCheckpointIO``.

The bug it finds is the upstream flake: fsspec's transaction commit renames the temp file onto the checkpoint and
then chmods it; ModelCheckpoint's top-k eviction removes that checkpoint in between, so the worker's chmod raises
FileNotFoundError, which AsyncCheckpointIO re-raises at teardown.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from plugin_helpers import section, token_of, trace_rows

pytest_plugins = ("pytester",)

UPSTREAM = Path(__file__).with_name("upstream_async_checkpoint.py")


def test_upstream_async_checkpoint_test_fails_deterministically_and_replays_in_another_process(pytester):
    pytest.importorskip("lightning")
    pytester.makepyfile(test_checkpoint_io_plugin=UPSTREAM.read_text())
    # In a fresh process, as the replay below: what other tests of this worker explored before must not decide
    # which schedule fails first (issue 49 item 7 is not closed for the plugin: see the closing note)
    first = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider", timeout=600)
    first.assert_outcomes(failed=1)
    out = first.stdout.str()
    report = section(out)
    token = token_of(report)
    assert "FileNotFoundError: [Errno 2] No such file or directory: " in out
    epoch0 = "/racefs/pytest/test_async_checkpoint_plugin/epoch=0-step=1.ckpt"
    rows = trace_rows(report)

    def first(op: str) -> int:
        return next(index for index, row in enumerate(rows) if op in row)

    # the worker renames its temp file onto epoch0, the main thread removes epoch0, then the worker's chmod fails
    assert first(f"-> {epoch0}") < first(f"fs.remove {epoch0}") < first(f"fs.chmod {epoch0}"), "\n".join(rows)
    # Lightning logs on every schedule; the report keeps the failing schedule's records only
    logged = section(out, "Captured log call")
    assert logged.count("`Trainer.fit` stopped: `max_epochs=3` reached.") == 1, logged
    assert int(re.search(r"failing schedule #(\d+)", report).group(1)) > 0

    command = re.search(r"^replay: (pytest .*)$", report, re.M).group(1)
    args = shlex.split(command)[1:]
    assert args == ["test_checkpoint_io_plugin.py::test_async_checkpoint_plugin", "--racecheck-replay", token]
    again = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider", *args, timeout=300)
    again.assert_outcomes(failed=1)
    replayed = section(again.stdout.str())
    assert replayed.split("\n\n", 1)[1] == report.split("\n\n", 1)[1]  # same trace, byte for byte


FIXED = """

from racecheck.fixed_impl import LockedAsyncCheckpointIO


@pytest.mark.racecheck(schedules=20, fs="posix")
def test_async_checkpoint_plugin_fixed(tmp_path):
    check_async_checkpoint_plugin(tmp_path, LockedAsyncCheckpointIO)
"""


def test_the_fixed_io_passes_the_same_upstream_test_through_the_plugin_with_only_fs_in_the_marker(pytester):
    """Nothing names ``racecheck.fixed_impl``: control by default reaches its queue, its worker and its files."""
    pytest.importorskip("lightning")
    pytester.makepyfile(test_checkpoint_io_plugin=UPSTREAM.read_text() + FIXED)
    run = pytester.runpytest("-p", "no:randomly", "-p", "no:cacheprovider", "-k", "fixed")
    run.assert_outcomes(passed=1)
