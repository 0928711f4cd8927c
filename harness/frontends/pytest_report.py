"""What the pytest plugin writes about a marked test: the failing schedule's report section, the replay command,
the remarks on the confirming replay, and the terminal summary's lines.

Plain text from plain values (it loads nothing of the engine): the runner calls it for a failure's section, and
:mod:`racecheck.pytest_plugin` for the summary, from ``user_properties`` that also reach an xdist controller.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from typing import Any

__racecheck_engine__ = True

REPLAY_PASSED = ("note: replaying the token in this process passed; state shared across schedules "
                 "(a fixture other than tmp_path/tmpdir?) may have made the failure depend on earlier ones")
REPLAY_TRACE_DIFFERS = "note: the replay's trace differs from the exploration's (shown: the replay's)"


def replay_command(nodeid: str, token: str) -> str:
    """The command that replays ``token`` in the test ``nodeid``."""
    return f"pytest {shlex.quote(nodeid)} --racecheck-replay {token}"


def replay_diverged(exc: BaseException) -> str:
    """The remark when the confirming replay did not take the exploration's path."""
    return (f"note: replaying the token in this process did not take the same path (state shared across "
            f"schedules through a fixture other than tmp_path/tmpdir?): {exc}")


def _thread(failure: Any) -> str:
    return f" in {failure.thread}" if failure.thread else ""


def failure_lines(nodeid: str, failure: Any, schedules: int, strategy: str, seed: int,
                  repetition: tuple[int, int] | None, remark: str) -> list[str]:
    """The head of a found failure's section: what failed where, its token and replay command, the remark if any.
    The first three lines are also the note added to the re-raised exception."""
    how = f"{strategy}, seed {seed}"
    if repetition is not None:
        how += f", repetition {repetition[0]} of {repetition[1]}"
    header = (f"schedule #{failure.schedule_index}, after {schedules} schedules ({how}): "
              f"{failure.kind}{_thread(failure)}, "
              f"{failure.preemptions} preemptions (before shrinking {failure.original_preemptions}), "
              f"{failure.steps} steps")
    lines = [f"racecheck found a failing {header}", f"token: {failure.token}",
             f"replay: {replay_command(nodeid, failure.token)}"]
    if remark:
        lines.append(remark)
    return lines


def replay_lines(nodeid: str, failure: Any, token: str) -> list[str]:
    """The head of the section of a failure replayed with ``--racecheck-replay``."""
    return [f"racecheck replayed schedule #{failure.schedule_index} ({failure.kind}{_thread(failure)}, "
            f"{failure.preemptions} preemptions, {failure.steps} steps)", f"token: {token}",
            f"replay: {replay_command(nodeid, token)}"]


def section(lines: list[str], trace: str) -> str:
    """The report section's text: the head lines, a blank line, the trace."""
    return "\n".join([*lines, "", trace])


def summary_line(nodeid: str, props: Mapping[str, Any], failed: bool, outcome: str) -> str:
    """One marked test in the terminal summary, from its report's user_properties."""
    if "racecheck_replay" in props:
        detail = "replay"
    else:
        detail = (f"{props['racecheck_schedules']} schedules, {props.get('racecheck_interleavings', 0)} "
                  f"interleavings ({props.get('racecheck_strategy')}, seed {props.get('racecheck_seed')}")
        if "racecheck_repetition" in props:
            detail += f", repetition {props['racecheck_repetition']}"
        exhausted = props.get("racecheck_exhausted")
        detail += f"; {exhausted})" if exhausted else ")"
    token = props.get("racecheck_token")
    shown = "FAILED" if failed else outcome
    return f"{nodeid}: {detail} {shown}" + (f" token {token}" if token else "")


def totals_line(tests: int, schedules: int, failures: int) -> str:
    """The terminal summary's last line."""
    return (f"racecheck: {tests} marked test{'s' if tests != 1 else ''}, "
            f"{schedules} schedule{'s' if schedules != 1 else ''}, {failures} failing")
