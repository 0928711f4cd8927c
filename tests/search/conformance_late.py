"""Reached by ``conformance_programs.late_reach`` in some schedules only: the first run that reaches it brings it
under memory watch as it goes (the strategy conformance suite counts that run's rerun as the same schedule)."""


def remember(seen: list, what: str) -> None:
    seen.append(what)
