"""Ordering races between the training thread's calls and the writer thread: the upstream bug family.

Lightning's ``ModelCheckpoint`` calls ``save(new)`` then ``remove(old)`` (top-k eviction) and re-saves
``last.ckpt``; the IO's writer thread applies saves later. Each workload below is the smallest call sequence
that exposes one way the two can disagree; its docstring is the oracle.
"""

from __future__ import annotations

import os

from racecheck.scenarios.helpers import Calls, checkpoint, committed, expect_files, load_step

POLLS = 32  # how many times delete-while-writing looks for the file before removing it anyway


def delete_while_queued(ctx) -> None:
    """save(a); save(b); remove(a); teardown(): a.ckpt must be gone, b.ckpt must hold b's checkpoint, and no call
    may raise.

    The remove arrives while a's save is still queued: it must cancel the write or run after it (Lightning
    #14035: the file is "deleted", then written anyway).

    Reader: target. What a checkpoint holds is read with a fresh instance of the target; which names exist, on
    the filesystem.
    """
    io, calls = ctx.new_io(), Calls()
    calls("save a", io.save_checkpoint, checkpoint(1), ctx.path("a.ckpt"))
    calls("save b", io.save_checkpoint, checkpoint(2), ctx.path("b.ckpt"))
    calls("remove a", io.remove_checkpoint, ctx.path("a.ckpt"))
    calls("teardown", io.teardown)
    calls.raise_first()
    expect_files(ctx, {"b.ckpt": 2})


def delete_while_writing(ctx) -> None:
    """save(a), then remove(a) as soon as a.ckpt is visible on disk, then teardown(): no call may raise (no
    sharing violation on Windows) and a.ckpt must be gone.

    The training thread believes the file is saved once it sees it; the writer may still hold it open (Lightning
    1.8 wrote the final name in place: PermissionError [WinError 32]) or be finishing its commit (2.x moves a temp
    file, then fixes permissions: FileNotFoundError).

    Reader: names. Only which names exist is checked, on the filesystem: nothing is left to read.
    """
    io, calls = ctx.new_io(), Calls()
    a = ctx.path("a.ckpt")
    calls("save a", io.save_checkpoint, checkpoint(1), a)
    for _ in range(POLLS):  # every look is a scheduling point on the fake filesystem
        if os.path.exists(a):
            break
    calls("remove a", io.remove_checkpoint, a)
    calls("teardown", io.teardown)
    calls.raise_first()
    expect_files(ctx, {})


def overwrite_same_path(ctx) -> None:
    """save(last, 1); save(last, 2); save(last, 3); teardown(): last.ckpt must hold step 3 (the last call wins) and
    no call may raise.

    Reader: target. What a checkpoint holds is read with a fresh instance of the target; which names exist, on
    the filesystem.
    """
    io, calls = ctx.new_io(), Calls()
    for step in (1, 2, 3):
        calls(f"save last {step}", io.save_checkpoint, checkpoint(step), ctx.path("last.ckpt"))
    calls("teardown", io.teardown)
    calls.raise_first()
    expect_files(ctx, {"last.ckpt": 3})


def load_while_pending(ctx) -> None:
    """With a committed a.ckpt (step 1): save(a, 2); load(a) must return step 2 (the pending save), then
    teardown(); no call may raise.

    Reader: target. The load under test is the target's own, on the instance that saved; afterwards a fresh
    instance reads the file, and which names exist is checked on the filesystem.
    """
    committed(ctx, "a.ckpt", 1)
    io, calls = ctx.new_io(), Calls()
    a = ctx.path("a.ckpt")
    calls("save a 2", io.save_checkpoint, checkpoint(2), a)
    loaded = calls("load a", io.load_checkpoint, a)
    calls("teardown", io.teardown)
    calls.raise_first()
    step = loaded.get("step") if isinstance(loaded, dict) else None
    if step != 2:
        raise AssertionError(f"load_checkpoint(a) returned step {step} while the save of step 2 was pending")
    expect_files(ctx, {"a.ckpt": 2})


def teardown_flush(ctx) -> None:
    """save(a, 1); save(b, 2); save(c, 3); remove(b); save(a, 4); teardown(): afterwards exactly a.ckpt (step 4)
    and c.ckpt (step 3) exist, nothing else (no temp file) is left, and no call raised.

    Reader: target. What a checkpoint holds is read with a fresh instance of the target; which names exist, on
    the filesystem.
    """
    io, calls = ctx.new_io(), Calls()
    calls("save a 1", io.save_checkpoint, checkpoint(1), ctx.path("a.ckpt"))
    calls("save b 2", io.save_checkpoint, checkpoint(2), ctx.path("b.ckpt"))
    calls("save c 3", io.save_checkpoint, checkpoint(3), ctx.path("c.ckpt"))
    calls("remove b", io.remove_checkpoint, ctx.path("b.ckpt"))
    calls("save a 4", io.save_checkpoint, checkpoint(4), ctx.path("a.ckpt"))
    calls("teardown", io.teardown)
    calls.raise_first()
    expect_files(ctx, {"a.ckpt": 4, "c.ckpt": 3})
    from racecheck.scenarios.helpers import names

    stray = [n for n in names(ctx.directory) if n not in ("a.ckpt", "c.ckpt")]
    if stray:
        raise AssertionError(f"teardown left stray files {stray}")


def snapshot_isolation(ctx) -> None:
    """save(a, w=0) then, as soon as it returns, w += 1 in place; teardown(): a.ckpt must hold the values at call
    time (step 0, w all 0).

    Reader: target. The file is read back with a fresh instance of the target.
    """
    io, calls = ctx.new_io(), Calls()
    state = checkpoint(0)
    calls("save a", io.save_checkpoint, state, ctx.path("a.ckpt"))
    state["state_dict"]["w"].add_(1.0)  # the optimizer step that follows a save
    calls("teardown", io.teardown)
    calls.raise_first()
    step = load_step(ctx, ctx.path("a.ckpt"))  # Incomplete if w no longer matches step 0
    if step != 0:
        raise AssertionError(f"a.ckpt holds step {step}, expected 0")
