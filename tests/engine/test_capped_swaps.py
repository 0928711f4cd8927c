"""A racing-pair swap cut short at its step cap (``post_budget.capped``) decides nothing: it is never taken for
"still fails the same way" (which made the report claim that no single pair decides the failure) nor for "passes";
the failure's notes say the pair was left unnamed because swaps were cut short."""

import threading

import racecheck
from racecheck.search import post_budget
from racecheck.search.race import NO_SINGLE_PAIR


class Box:
    def __init__(self) -> None:
        self.flag = False

    def set(self) -> None:
        self.flag = True


def late_flag() -> None:
    """Fails when the main thread reads the flag before the other thread sets it; read after, it goes on to more
    work than the failing run did (a swap of the pair runs longer than the failure)."""
    box = Box()
    lock = threading.Lock()
    t = threading.Thread(target=box.set)
    t.start()
    seen = box.flag
    if seen:
        for _ in range(20):
            with lock:
                pass
    t.join()
    assert seen, "read before the write"


def _explore():
    return racecheck.explore(late_flag, strategy="dfs", schedules=20, shrink_budget=0)


def test_with_room_the_swap_passes_and_names_the_pair():
    failure = _explore().failure
    assert failure is not None and failure.race is not None and failure.race.swapped_outcome == "passes", failure
    assert failure.notes == []


def test_a_swap_cut_at_its_cap_is_undecided_and_the_note_says_so(monkeypatch):
    monkeypatch.setattr(post_budget, "PROBE_FLOOR", 1)
    monkeypatch.setattr(post_budget, "PROBE_FACTOR", 1)  # a swap may run only as many steps as the failing run
    failure = _explore().failure
    assert failure is not None and failure.race is None, failure
    assert not any(note.startswith(NO_SINGLE_PAIR) for note in failure.notes), failure.notes
    note = next(note for note in failure.notes if note.startswith("racing pair left unnamed"))
    assert "cut short at the step cap decided nothing" in note and "Box#1.flag" in note, note
    assert note in str(failure)
