"""Every ``racecheck.Config`` field as a ``racecheck explore`` flag, derived from the dataclass itself, so an option
added to Config is on the command line without a change here.

A field's flag is ``--`` plus its name with dashes; what it parses follows its default value: a bool becomes
``--name/--no-name``, an int, float or str takes one value, a tuple takes the flag repeatedly. The few fields whose
values are richer or narrower than their default's type (``strategy``, ``schedules``, ``seed``, ``fs``,
``preemption_bound``, ``watchdog``, ``preempt``, ``locations``) have a parser below. ``progress`` and ``on_crash``
take Python callables and have no flag (the CLI shows its own progress). A flag left out leaves Config's default,
and a value Config refuses is one line, exit 2.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import click
from racecheck.config import LOCATION_MODES, Config
from racecheck.frontends.cli.cells import InputError
from racecheck.search.data_races import MODES as DATA_RACE_MODES
from racecheck.search.registry import STRATEGY_NAMES

__racecheck_engine__ = True

NO_FLAG = frozenset({"progress", "on_crash"})


def _none_or(convert: Callable[[str], Any], name: str, what: str) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        if text.strip().lower() in ("none", "inf", "unbounded"):
            return None
        try:
            return convert(text)
        except ValueError:
            raise InputError(f"--{name} must be {what} or 'none', not {text!r}") from None
    return parse


def _bound(text: str) -> Any:
    return "default" if text.strip() == "default" else _none_or(int, "preemption-bound", "an int")(text)


def _preempt(values: tuple[str, ...]) -> Any:
    if not values:
        return None
    return "lines" if values == ("lines",) else tuple(values)


# name -> (click keywords, how the raw value becomes the Config value)
_SPECIAL: dict[str, tuple[dict[str, Any], Callable[[Any], Any]]] = {
    "strategy": ({"type": click.Choice(STRATEGY_NAMES)}, str),
    # the same ranges as ``racecheck run``: schedules are cut into chunks up front, seeds must fit a token
    "schedules": ({"type": click.IntRange(1, 10_000_000)}, int),
    "seed": ({"type": click.IntRange(-(2**62), 2**62)}, int),
    "fs": ({"type": click.Choice(("real", "posix", "windows")),
            "help": "a fresh fake filesystem per schedule (posix or windows semantics); real: none [real]"},
           lambda v: None if v == "real" else v),
    "preemption_bound": ({"metavar": "N|none|default"}, _bound),
    "watchdog": ({"metavar": "SECONDS|none"}, _none_or(float, "watchdog", "a number of seconds")),
    "preempt": ({"multiple": True, "metavar": "lines|MOD"}, _preempt),
    "locations": ({"type": click.Choice(LOCATION_MODES)}, str),
    "data_races": ({"type": click.Choice(DATA_RACE_MODES)}, str),
    # patterns of intended races (``Config.benign``): "Stats.hits", "*.hits", "global m.x", "file /tmp/*", "f.py:12"
    "benign": ({"multiple": True, "metavar": "PATTERN"}, tuple),
}


def _flag(field: dataclasses.Field) -> tuple[list[str], dict[str, Any], Callable[[Any], Any]]:
    name = field.name
    dashed = "--" + name.replace("_", "-")
    default = field.default
    help_text = f"Config.{name} [{default!r}]"
    if name in _SPECIAL:
        keywords, convert = _SPECIAL[name]
        keywords = {"help": help_text, **keywords}
        return [dashed, name], {"default": None, **keywords}, convert
    if isinstance(default, bool):
        off = "--no-" + name.replace("_", "-")
        return [f"{dashed}/{off}", name], {"default": None, "help": help_text}, bool
    if isinstance(default, tuple):
        return [dashed, name], {"multiple": True, "metavar": "MOD", "help": help_text}, tuple
    if isinstance(default, int):
        return [dashed, name], {"type": int, "default": None, "help": help_text}, int
    if isinstance(default, float):
        return [dashed, name], {"type": float, "default": None, "help": help_text}, float
    return [dashed, name], {"type": str, "default": None, "help": help_text}, str


FLAGS: dict[str, tuple[list[str], dict[str, Any], Callable[[Any], Any]]] = {
    field.name: _flag(field) for field in dataclasses.fields(Config) if field.name not in NO_FLAG
}


def config_flags(command: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate a click command with one flag per Config field (values reach it as keywords, None when unset)."""
    for decls, attrs, _ in reversed(FLAGS.values()):
        command = click.option(*decls, **attrs)(command)
    return command


def given(values: dict[str, Any]) -> dict[str, Any]:
    """The Config values the user set (flags left out are absent), checked by Config itself."""
    out: dict[str, Any] = {}
    for name, (_, _, convert) in FLAGS.items():
        raw = values.get(name)
        if raw is None or raw == ():
            continue
        out[name] = convert(raw)
    try:
        Config(**out)
    except (TypeError, ValueError) as exc:
        raise InputError(f"bad option: {exc}") from None
    return out
