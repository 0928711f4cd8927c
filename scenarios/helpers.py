"""Helpers every scenario shares: tiny checkpoints, outcome checks, error capture, quiet Lightning.

Why one place: oracles must check outcomes (files, contents, exceptions) the same way in every scenario, and
never a target's private fields. Two readers: what a checkpoint holds, and whether it is complete, is read through
the target itself (``read_checkpoint``: a fresh instance's ``load_checkpoint``), so any format the target writes is
judged; which names exist, and what is left over, is read on the filesystem (``names``, ``ckpt_names``). This
module is instrumented with each scenario, so its ``os`` and ``open`` reach the fake filesystem inside a run.
"""

from __future__ import annotations

import contextlib
import logging
import os
import warnings
from collections.abc import Callable, Iterable, Iterator
from typing import Any

CKPT_SUFFIX = ".ckpt"


def checkpoint(step: int, size: int = 4) -> dict[str, Any]:
    """A small checkpoint whose tensor encodes its step, so a torn or stale file is recognisable."""
    import torch

    return {"step": step, "state_dict": {"w": torch.full((size,), float(step))}}


class Incomplete(AssertionError):
    """A file under a checkpoint name that does not load as a complete checkpoint."""


def read_checkpoint(ctx: Any, path: str) -> Any:
    """The checkpoint at ``path`` as the target reads it back: a fresh instance of the target (``ctx.new_io()``),
    its own ``load_checkpoint``, then its ``teardown``. So a directory format or a custom serialiser is judged by
    its own reader, never by a ``torch.load`` of a file. FileNotFoundError when nothing is there (checked on the
    filesystem: a reader may say "not found" about a part of a checkpoint that is there); Incomplete when what is
    there does not load."""
    io = ctx.new_io()
    try:
        return io.load_checkpoint(path)
    except FileNotFoundError as exc:
        if not os.path.exists(path):
            raise
        raise Incomplete(f"{os.path.basename(path)} is not a complete checkpoint: {type(exc).__name__}: {exc}") \
            from None
    except Exception as exc:  # noqa: BLE001 - any load error means the checkpoint is not complete
        raise Incomplete(f"{os.path.basename(path)} is not a complete checkpoint: {type(exc).__name__}: {exc}") \
            from None
    finally:
        io.teardown()


def load_step(ctx: Any, path: str) -> int:
    """The step stored in the checkpoint at ``path``, read through the target (``read_checkpoint``); Incomplete
    if it is partial, torn or inconsistent."""
    data = read_checkpoint(ctx, path)
    step = data.get("step") if isinstance(data, dict) else None
    weights = data.get("state_dict", {}).get("w") if isinstance(data, dict) else None
    if not isinstance(step, int) or weights is None or not bool((weights == float(step)).all()):
        raise Incomplete(f"{os.path.basename(path)} holds an inconsistent checkpoint (step {step!r})")
    return step


def names(directory: str) -> list[str]:
    """Every entry of ``directory`` (sorted), or [] when it does not exist."""
    try:
        return sorted(os.listdir(directory))
    except FileNotFoundError:
        return []


def ckpt_names(directory: str) -> list[str]:
    return [n for n in names(directory) if n.endswith(CKPT_SUFFIX)]


def expect_files(ctx: Any, expected: dict[str, int], directory: str | None = None) -> None:
    """The directory (``ctx.directory`` by default) holds exactly ``expected`` (name -> step) under checkpoint names
    (file-level: names on the filesystem), each complete with that step (read through the target)."""
    directory = ctx.directory if directory is None else directory
    present = ckpt_names(directory)
    leaked = sorted(set(present) - set(expected))
    if leaked:
        raise AssertionError(f"leaked checkpoint(s) {leaked}: removed, then written anyway")
    missing = sorted(set(expected) - set(present))
    if missing:
        raise AssertionError(f"lost checkpoint(s) {missing}: saved but missing after teardown")
    for name, step in sorted(expected.items()):
        got = load_step(ctx, os.path.join(directory, name))
        if got != step:
            raise AssertionError(f"{name} holds step {got}, expected step {step} (the last save of that path)")


def committed(ctx: Any, name: str, step: int, durable: bool = False) -> None:
    """A checkpoint saved through its own IO instance and torn down (so complete) before the part under test;
    ``durable``: also os.sync() (survives a power loss). ``ctx.state["committed"]`` says it got that far."""
    io, calls = ctx.new_io(), Calls()
    calls(f"save {name}", io.save_checkpoint, checkpoint(step), ctx.path(name))
    calls("teardown", io.teardown)
    calls.raise_first()
    if durable:
        os.sync()
    ctx.state["committed"] = True


class Calls:
    """Runs IO calls the way a training loop does and records every exception they raise (never swallowed)."""

    def __init__(self) -> None:
        self.errors: list[tuple[str, BaseException]] = []

    def __call__(self, what: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - recorded; the oracle decides
            self.errors.append((what, exc))
            return None

    def raise_first(self) -> None:
        """No IO call may raise: re-raise the first error (the oracle's verdict), with where it surfaced."""
        if self.errors:
            raise self.errors[0][1]


QUIET_LOGGERS = ("lightning.pytorch", "lightning.fabric", "pytorch_lightning", "lightning_fabric")


@contextlib.contextmanager
def quiet(modules: Iterable[str] = ()) -> Iterator[None]:
    """Silence Lightning's per-schedule console output (tips, "GPU available", progress) and the target's own
    warnings (``modules``' loggers) inside a scenario: thousands of schedules would print thousands of lines.
    Errors still print; the oracle, not the log, decides."""
    saved = []
    for name in dict.fromkeys((*QUIET_LOGGERS, *modules)):
        logger = logging.getLogger(name)
        saved.append((logger, logger.level))
        logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        for logger, level in saved:
            logger.setLevel(level)


INJECTED = "injected write failure"


class Poison:
    """A checkpoint value whose serialisation fails in the writer, like a disk error mid-save (EIO)."""

    def __reduce__(self) -> Any:
        import errno

        raise OSError(errno.EIO, INJECTED)


def is_injected(exc: BaseException) -> bool:
    """The injected failure, possibly wrapped by the IO (its message or one of its causes)."""
    seen = 0
    while exc is not None and seen < 8:
        if INJECTED in str(exc):
            return True
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
        seen += 1
    return False
