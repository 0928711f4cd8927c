"""Failures around the writer: a fault while writing, and Windows' replace onto a file someone has open.

Both are about what the caller is told: an error must reach the training thread (once, and without collateral
damage), and a write that did not happen must never look like one that did.
"""

from __future__ import annotations

import os
import threading

from racecheck.scenarios.helpers import Calls, Incomplete, Poison, checkpoint, committed, is_injected, load_step


def error_propagation(ctx) -> None:
    """With a committed good.ckpt: save(bad) failing in the writer; remove(good); save(other); teardown() in the
    error handler: the failure must surface exactly once, good.ckpt must survive complete, and no bad.ckpt may exist.

    The remove is ModelCheckpoint's top-k eviction, issued before the caller can know that the newer save
    failed: acting on it would leave no checkpoint at all. Lightning tears the IO down in its exception
    handler, so an error raised by a call and raised again by teardown counts twice.

    Reader: target. good.ckpt and other.ckpt are read with a fresh instance of the target; whether bad.ckpt and
    good.ckpt exist is checked on the filesystem.
    """
    committed(ctx, "good.ckpt", 1)
    io = ctx.new_io()
    errors: list[BaseException] = []
    bad = checkpoint(2)
    bad["extra"] = Poison()
    try:
        io.save_checkpoint(bad, ctx.path("bad.ckpt"))
        io.remove_checkpoint(ctx.path("good.ckpt"))
        io.save_checkpoint(checkpoint(3), ctx.path("other.ckpt"))
    except Exception as exc:  # noqa: BLE001 - the oracle counts what surfaced
        errors.append(exc)
    try:
        io.teardown()
    except Exception as exc:  # noqa: BLE001
        errors.append(exc)
    unexpected = [e for e in errors if not is_injected(e)]
    if unexpected:
        raise unexpected[0]
    if len(errors) != 1:
        raise AssertionError(f"the writer's failure surfaced {len(errors)} times, expected exactly once")
    if os.path.exists(ctx.path("bad.ckpt")):
        raise AssertionError("bad.ckpt exists although its save failed")
    if not os.path.exists(ctx.path("good.ckpt")):
        raise AssertionError("good.ckpt was deleted although the save that replaced it failed")
    load_step(ctx, ctx.path("good.ckpt"))
    if os.path.exists(ctx.path("other.ckpt")) and load_step(ctx, ctx.path("other.ckpt")) != 3:
        raise AssertionError("other.ckpt holds the wrong step")


def windows_replace_open(ctx) -> None:
    """save(last, 1) and flush; then save(last, 2) while another thread reads last.ckpt: the reader gets a complete
    checkpoint, and after teardown last.ckpt holds step 2 unless an error surfaced to the caller.

    On Windows, replacing a file that is open fails (sharing violation / access denied): the IO may surface
    that or retry, never report success while the old checkpoint stays in place.

    Reader: target. The reader thread, like an evaluation process, loads last.ckpt with its own fresh instance of
    the target; so does the final check.
    """
    committed(ctx, "last.ckpt", 1)
    io, calls = ctx.new_io(), Calls()
    last = ctx.path("last.ckpt")
    seen: list[object] = []

    def reader() -> None:  # an evaluation process reading the latest checkpoint
        try:
            seen.append(load_step(ctx, last))
        except Exception as exc:  # noqa: BLE001 - checked below
            seen.append(exc)

    thread = threading.Thread(target=reader, name="reader")
    thread.start()
    calls("save last 2", io.save_checkpoint, checkpoint(2), last)
    calls("teardown", io.teardown)
    thread.join()
    if isinstance(seen[0], Incomplete):
        raise seen[0]
    if isinstance(seen[0], BaseException):
        raise AssertionError(f"the reader could not read last.ckpt: {type(seen[0]).__name__}: {seen[0]}")
    if not calls.errors and load_step(ctx, last) != 2:
        raise AssertionError("no error surfaced, yet last.ckpt still holds step 1: the replace silently failed")
