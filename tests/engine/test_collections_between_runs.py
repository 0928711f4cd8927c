"""The garbage collector between runs: what existed before an exploration is frozen for its duration and thawed
after it, and a program's own freeze is left alone."""

import gc

import racecheck


class _Cycle:
    finalized: list[str] = []

    def __init__(self, name: str) -> None:
        self.name = name
        self.me = self

    def __del__(self) -> None:
        _Cycle.finalized.append(self.name)


def _body() -> None:
    racecheck.point("x")


def test_the_heap_before_an_exploration_is_frozen_during_it_and_thawed_after() -> None:
    seen: list[int] = []

    def body() -> None:
        seen.append(gc.get_freeze_count())

    assert gc.get_freeze_count() == 0
    result = racecheck.explore(body, schedules=2, memory=False)
    assert result.ok
    assert seen and all(count > 0 for count in seen)
    assert gc.get_freeze_count() == 0


def test_garbage_made_before_the_exploration_is_collected_after_it() -> None:
    _Cycle.finalized.clear()
    _Cycle("before")  # a cycle: only the collector frees it
    racecheck.explore(_body, schedules=3, memory=False)
    gc.collect()
    assert _Cycle.finalized == ["before"]


def test_a_program_that_froze_its_heap_keeps_its_freeze() -> None:
    gc.freeze()
    try:
        count = gc.get_freeze_count()
        racecheck.explore(_body, schedules=2, memory=False)
        assert gc.get_freeze_count() > count // 2  # still frozen (objects freed meanwhile leave it)
    finally:
        gc.unfreeze()
