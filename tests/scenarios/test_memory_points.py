"""The seed report's own race with memory watched (issue 47, item 6): Lightning 1.8's writer under windows
semantics, save then remove while the write runs, gives ``PermissionError [WinError 32]``. Every memory access in
torch's and fsspec's writers is a decision, and pct counted them all, so the sharing violation took it 34
schedules (median of seeds 0-4; 138 at seed 1) against 13 with ``memory=False``. Counting only the decisions that
can conflict (``racecheck.search.shared_memory``), pct finds it within the gate's 50 schedules at every one of
these seeds, with the leak."""

from __future__ import annotations

import pytest

pytest.importorskip("lightning")

from racecheck import scenarios  # noqa: E402

WINERROR = "PermissionError: [WinError 32]"


@pytest.mark.parametrize("seed", range(5))
def test_pct_finds_winerror_32_with_memory_watched_within_the_gates_budget(seed):
    result = scenarios.run("delete-while-writing", target=scenarios.LEGACY_TARGET, fs="windows", strategy="pct",
                           schedules=50, seed=seed, max_failures=2, shrink_budget=0, race_budget=0)
    messages = [failure.message for failure in result.failures]
    assert any(message.startswith(WINERROR) for message in messages), messages
