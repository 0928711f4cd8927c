"""What consumes a run is fed through the runtime's interfaces (``racecheck.runtime.chooser``,
``racecheck.runtime.sinks``), not by fields the upper layers park on a ``Run`` or by reading trace events by
position. Read from the source with ``ast`` (``import_graph``); a planted offence in a module's source is caught.
"""

from __future__ import annotations

import ast

import import_graph
import pytest

MODULES = import_graph.load()
# The layers that consume runs as they come (the report layer reads results, whose events are plain lists from JSON)
UPPER = ("racecheck.search", "racecheck.control", "racecheck.fakefs")

# What the layers above the runtime may set on a run: its configuration before it starts (the session's
# ``_prepare``: source lines, the memory watch and how many modules it held, where its threads run, how its memory
# component watches) and the counters of the run contract that the control layer keeps during it (threads waiting
# outside; code that came under watch meanwhile); and its outcome where a sink's finding fails the ended run
# (``data_races="fail"``), which its chooser's ``RunEnd`` then says. A result is not among them: it stays on the
# sink that found it.
RUN_SETTINGS = frozenset({"locate", "watch", "watched_modules", "launch", "memory_steps.learning",
                          "memory_steps.sampled", "memory_steps.recurring", "memory_steps.cold_codes", "outside",
                          "stale", "failure"})
EVENT_NAMES = frozenset({"event", "ev", "step", "row"})  # names that hold a trace event or a step in the engine


def _chain(node: ast.expr) -> list[str] | None:
    """``run.memory_steps.learning`` as ["run", "memory_steps", "learning"]; None for anything else."""
    names: list[str] = []
    while isinstance(node, ast.Attribute):
        names.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    names.append(node.id)
    return names[::-1]


def offences(tree: ast.AST) -> list[str]:
    """Attribute writes onto a ``run`` that are no setting, reads of ``run.races``, and positional reads of an event
    or a step (``event[4]``, ``run.trace[0][2]``), in one module's tree."""
    found = []
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        for target in targets:
            chain = _chain(target) if isinstance(target, ast.Attribute) else None
            if chain and chain[0] == "run" and ".".join(chain[1:]) not in RUN_SETTINGS:
                found.append(f"line {node.lineno}: writes {'.'.join(chain)} onto a run")
        if isinstance(node, ast.Attribute) and node.attr == "races" and _chain(node) == ["run", "races"]:
            found.append(f"line {node.lineno}: reads run.races (a run's data races are its sink's)")
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and \
                isinstance(node.slice.value, int):
            value = node.value
            if isinstance(value, ast.Subscript):  # run.trace[0][2]: a field of an event by position
                value = value.value
                chain = _chain(value)
                if chain and chain[-1] in ("trace", "taken"):
                    found.append(f"line {node.lineno}: reads a field of {'.'.join(chain)}[...] by position")
            elif isinstance(value, ast.Name) and value.id in EVENT_NAMES:
                found.append(f"line {node.lineno}: reads {value.id}[{node.slice.value}] by position")
    return found


def _upper() -> list[import_graph.Module]:
    return [m for name, m in sorted(MODULES.items()) if name.startswith(UPPER)]


@pytest.mark.parametrize("module", _upper(), ids=lambda m: m.name)
def test_upper_layers_feed_on_a_run_only_through_its_interfaces(module):
    assert not offences(module.tree), f"{module.name}: " + "; ".join(offences(module.tree))


def test_the_data_race_finder_is_fed_only_as_a_sink():
    """The data-race finder (``race_clocks.RaceClocks``) is made by the data-race sink alone: it is fed the run's
    steps through the protocol, by nobody else, and no whole-trace pass over an ended run is left in the tree."""
    makers = []
    for name, module in sorted(MODULES.items()):
        for node in ast.walk(module.tree):
            if isinstance(node, ast.Call):
                func = node.func
                called = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
                if called == "RaceClocks":
                    makers.append(name)
            if isinstance(node, ast.FunctionDef) and node.name == "find" and name.startswith("racecheck.search.data"):
                makers.append(f"{name}.find")
    assert sorted(set(makers)) == ["racecheck.search.data_race_sink"]


@pytest.mark.parametrize("source, what", [
    ("run.races = find(run)", "writes run.races"),
    ("run.memory_steps.where = {}", "writes run.memory_steps.where"),
    ("x = run.races", "reads run.races"),
    ("kind = event[4]", "reads event[4]"),
    ("tid = run.trace[0][1]", "by position"),
])
def test_a_planted_offence_is_caught(source, what):
    found = offences(ast.parse(source))
    assert found and what in found[0]


def test_settings_and_attribute_reads_pass():
    assert not offences(ast.parse("run.locate = True\nrun.memory_steps.sampled = False\n"
                                  "tid = event.tid\nfirst = run.trace[0]\nsteps = found[k]"))
