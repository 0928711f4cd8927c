"""What the pytest plugin writes about a marked test: the failing schedule's report section, the replay command,
the remarks on the confirming replay, and the terminal summary's lines.

Plain text from plain values (it loads nothing of the engine): the runner calls it for a failure's section, and
:mod:`racecheck.pytest_plugin` for the summary, from ``user_properties`` that also reach an xdist controller.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from racecheck.report.words import count

__racecheck_engine__ = True

REPLAY_PASSED = ("note: replaying the token in this process passed; state shared across schedules "
                 "(a fixture other than tmp_path/tmpdir?) may have made the failure depend on earlier ones")
REPLAY_TRACE_DIFFERS = "note: the replay's trace differs from the exploration's (shown: the replay's)"
NOT_A_RACE = "fails under every schedule tried: not a race"


@dataclass(frozen=True)
class How:
    """What an exploration of one test was: its node id, schedules run, strategy, seed, pytest-repeat repetition,
    and the options a replay command needs besides the token."""

    nodeid: str
    schedules: int
    strategy: str
    seed: int
    repetition: tuple[int, int] | None = None
    replay_args: Sequence[str] = ()


def replay_command(nodeid: str, token: str, args: Sequence[str] = ()) -> str:
    """The command that replays ``token`` in the test ``nodeid``, with the options it was explored with that a
    replay needs (``--racecheck`` for an unmarked test, ``--racecheck-fs``, ``--racecheck-instrument``)."""
    extra = "".join(f" {shlex.quote(arg)}" for arg in args)
    return f"pytest {shlex.quote(nodeid)}{extra} --racecheck-replay {token}"


def replay_diverged(exc: BaseException) -> str:
    """The remark when the confirming replay did not take the exploration's path."""
    return (f"note: replaying the token in this process did not take the same path (state shared across "
            f"schedules through a fixture other than tmp_path/tmpdir?): {exc}")


def _thread(failure: Any) -> str:
    return f" in {failure.thread}" if failure.thread else ""


def failure_lines(how: How, failure: Any, remark: str, total: int = 1, position: int = 1) -> list[str]:
    """The head of one found failure's section: what failed where (or that it fails under every schedule tried),
    its token and replay command, the remark if any. ``total`` distinct failures were found; this is the
    ``position``-th. The first three lines of the first failure are also the note added to the re-raised
    exception."""
    detail = f"{how.strategy}, seed {how.seed}"
    if how.repetition is not None:
        detail += f", repetition {how.repetition[0]} of {how.repetition[1]}"
    steps = (f"{failure.kind}{_thread(failure)}, "
             f"{count(failure.preemptions, 'preemption')} (before shrinking {failure.original_preemptions}), "
             f"{count(failure.steps, 'step')}")
    number = f"[{position}/{total}] " if total > 1 else ""
    if failure.not_a_race:
        head = (f"racecheck: {number}{NOT_A_RACE}: {failure.message.splitlines()[0] if failure.message else ''} "
                f"(first at schedule #{failure.schedule_index}, after {count(how.schedules, 'schedule')} ({detail}): "
                f"{steps})")
    else:
        found = "a failing" if total == 1 else f"{total} distinct failures; {number}failing"
        if failure.hang:
            found = ("a hanging (an uncontrolled wait, not a race)" if total == 1
                     else f"{total} distinct failures; {number}hanging (an uncontrolled wait, not a race)")
        head = (f"racecheck found {found} schedule #{failure.schedule_index}, after "
                f"{count(how.schedules, 'schedule')} ({detail}): {steps}")
    lines = [head, f"token: {failure.token}", f"replay: {replay_command(how.nodeid, failure.token, how.replay_args)}"]
    if position > 1:
        lines.append(f"{failure.message.splitlines()[0] if failure.message else failure.kind}")
    if failure.race is not None:
        lines.append(str(failure.race))
    if remark:
        lines.append(remark)
    return lines


def replay_lines(nodeid: str, failure: Any, token: str, args: Sequence[str] = ()) -> list[str]:
    """The head of the section of a failure replayed with ``--racecheck-replay``."""
    return [f"racecheck replayed schedule #{failure.schedule_index} ({failure.kind}{_thread(failure)}, "
            f"{count(failure.preemptions, 'preemption')}, {count(failure.steps, 'step')})", f"token: {token}",
            f"replay: {replay_command(nodeid, token, args)}"]


def section(lines: list[str], trace: str) -> str:
    """The report section's text: the head lines, a blank line, the trace."""
    return "\n".join([*lines, "", trace])


def summary_line(nodeid: str, props: Mapping[str, Any], failed: bool, outcome: str) -> str:
    """One marked test in the terminal summary, from its report's user_properties."""
    if "racecheck_replay" in props:
        detail = "replay"
    else:
        detail = (f"{count(int(props['racecheck_schedules']), 'schedule')}, "
                  f"{count(int(props.get('racecheck_interleavings', 0)), 'interleaving')} "
                  f"({props.get('racecheck_strategy')}, seed {props.get('racecheck_seed')}")
        if "racecheck_repetition" in props:
            detail += f", repetition {props['racecheck_repetition']}"
        exhausted = props.get("racecheck_exhausted")
        detail += f"; {exhausted})" if exhausted else ")"
    token = props.get("racecheck_token")
    shown = "FAILED" if failed else outcome
    if failed and props.get("racecheck_verdict") == "not-a-race":
        shown += f" ({NOT_A_RACE})"
    tokens = str(props.get("racecheck_tokens", "")).split()
    if len(tokens) > 1:
        line = f"{nodeid}: {detail} {shown}, {len(tokens)} distinct failures, tokens {' '.join(tokens)}"
    else:
        line = f"{nodeid}: {detail} {shown}" + (f" token {token}" if token else "")
    below = [props.get("racecheck_coverage", ""), props.get("racecheck_data_races", "")]
    return "\n".join([line, *(f"  {text}".replace("\n", "\n  ") for text in below if text)])


def totals_line(tests: int, schedules: int, failures: int, replays: int = 0) -> str:
    """The terminal summary's last line: tests explored (marked, or every test with ``--racecheck``) and replayed
    (``--racecheck-replay``), the schedules they ran, how many failed."""
    explored = tests - replays
    parts = [count(explored, "explored test")] if explored or not replays else []
    if replays:
        parts.append(count(replays, "replayed test"))
    return f"racecheck: {', '.join(parts)}, {count(schedules, 'schedule')}, {failures} failing"
