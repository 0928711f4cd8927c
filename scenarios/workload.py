"""Generated workloads: sequences of save / save-same-path / remove / load / teardown over a few paths, checked
against a sequential model of the store.

Why: the named scenarios are the races someone already thought of. Here hypothesis generates the call sequence
(and shrinks it to the shortest one that still fails) while racecheck explores (and shrinks) the schedule of each.
The sequential model is what a synchronous IO would do: loads return the last save of the path, removes win over
earlier saves, and after teardown the directory holds exactly the model's files.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass

from racecheck.scenarios.helpers import Calls, checkpoint, expect_files

PATHS = ("a.ckpt", "b.ckpt", "c.ckpt")
KINDS = ("save", "remove", "load", "teardown")


@dataclass(frozen=True)
class Op:
    kind: str  # one of KINDS
    path: str = ""

    def __str__(self) -> str:
        return f"{self.kind} {self.path}".strip()


def parse(text: str) -> list[Op]:
    """``"save a; load a; remove a; teardown"`` -> ops (paths given without the .ckpt suffix)."""
    ops = []
    for part in filter(None, (p.strip() for p in text.split(";"))):
        kind, _, path = part.partition(" ")
        if kind not in KINDS or (kind != "teardown") != bool(path):
            raise ValueError(f"bad workload operation {part!r}")
        ops.append(Op(kind, f"{path}.ckpt" if path else ""))
    return ops


DEFAULT = parse("save a; save b; load a; save a; remove b; load a; save c; teardown; remove a; save c; load c; "
                "load b; teardown")


def describe(ops: Sequence[Op]) -> str:
    return "; ".join(str(op).replace(".ckpt", "") for op in ops)


def run_ops(ctx, ops: Sequence[Op]) -> None:
    """Apply ``ops`` to a fresh IO and check every result against the sequential model."""
    io, calls = ctx.new_io(), Calls()
    model: dict[str, int] = {}
    for i, op in enumerate(ops, 1):
        path = ctx.path(op.path) if op.path else ""
        if op.kind == "save":
            model[op.path] = i
            calls(f"#{i} {op}", io.save_checkpoint, checkpoint(i), path)
        elif op.kind == "remove":
            model.pop(op.path, None)
            calls(f"#{i} {op}", io.remove_checkpoint, path)
        elif op.kind == "teardown":
            calls(f"#{i} {op}", io.teardown)
        else:
            try:
                loaded = io.load_checkpoint(path)
            except FileNotFoundError:
                if op.path in model:
                    raise AssertionError(f"#{i} {op}: FileNotFoundError, but step {model[op.path]} was saved there "
                                         "(and not removed)") from None
                continue
            except Exception as exc:  # noqa: BLE001 - recorded, the first one is raised below
                calls.errors.append((f"#{i} {op}", exc))
                continue
            step = loaded.get("step") if isinstance(loaded, dict) else None
            if step != model.get(op.path):
                expected = model.get(op.path, "FileNotFoundError")
                raise AssertionError(f"#{i} {op} returned step {step}, the sequential model says {expected}")
        calls.raise_first()
    calls("final teardown", io.teardown)
    calls.raise_first()
    expect_files(ctx, model)


def workload(ctx) -> None:
    """A sequence of save / save-same-path / remove / load / teardown over a few paths behaves like the sequential
    model: every load returns the last save of its path, no call raises, and after teardown exactly the model's
    files exist with the model's contents.

    Reader: target. Loads are the target's own, on the instance under test; afterwards a fresh instance reads each
    file, and which names exist is checked on the filesystem.
    """
    run_ops(ctx, ctx.scenario.extra or DEFAULT)


def scenario_for(ops: Sequence[Op]):
    """A Scenario running ``ops`` (a hypothesis example); its name carries the ops, so tokens stay per workload."""
    from racecheck.scenarios.core import define

    text = describe(ops)
    return define(f"workload[{zlib.crc32(text.encode()):08x}]", workload, extra=tuple(ops), small=len(ops) <= 6)
