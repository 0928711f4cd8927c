"""Run in a fresh process by test_managers.py: replay each (manager, scenario, fs, token) given as JSON on stdin and
print, per token, a JSON line with the failure's message and trace (null when the schedule passed, a string
when the replay diverged)."""

from __future__ import annotations

import json
import sys

import racecheck
from racecheck import scenarios


def main() -> None:
    for spec, name, fs, token in json.load(sys.stdin):
        prepared = scenarios.get(name).build(scenarios.load_target(spec), fs)
        try:
            failure = racecheck.replay(prepared.fn, token, **prepared.explore_kwargs).failure
        except racecheck.ReplayDivergence as exc:
            print(json.dumps(f"{spec}: {exc}"), flush=True)
            continue
        print(json.dumps(None if failure is None else [failure.message, failure.trace]), flush=True)


if __name__ == "__main__":
    main()
