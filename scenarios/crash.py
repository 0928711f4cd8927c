"""Power loss at any point of a checkpointing sequence (the fake filesystem's crash fault), then recovery.

Why only on the fake filesystem: a power loss is simulated by the store (unsynced data and directory entries
are lost); the real disk cannot be crashed from a test. The recovery function is the oracle: it looks at what
survived, as the next training run would.
"""

from __future__ import annotations

from racecheck.scenarios.helpers import Calls, Incomplete, checkpoint, ckpt_names, committed, expect_files, load_step


def evict_before_commit(ctx) -> None:
    """With a durable old.ckpt, save(new); remove(old); teardown(), crashing at any point: at least one complete
    checkpoint survives.

    Top-k eviction must not delete the only complete checkpoint before its replacement is committed (durable).

    Reader: target. After the crash, each surviving name is read with a fresh instance of the target.
    """
    committed(ctx, "old.ckpt", 1, durable=True)
    io, calls = ctx.new_io(), Calls()
    calls("save new", io.save_checkpoint, checkpoint(2), ctx.path("new.ckpt"))
    calls("remove old", io.remove_checkpoint, ctx.path("old.ckpt"))
    calls("teardown", io.teardown)
    calls.raise_first()
    expect_files(ctx, {"new.ckpt": 2})


def evict_before_commit_recovery(ctx) -> None:
    if not ctx.state.get("committed"):
        return  # the power failed before old.ckpt was durable: nothing was promised yet
    complete = []
    for name in ckpt_names(ctx.directory):
        try:
            complete.append((name, load_step(ctx, ctx.path(name))))
        except Incomplete:
            continue
    if not complete:
        raise AssertionError("no complete checkpoint survived the crash: old.ckpt was evicted before new.ckpt "
                             "was committed")


def crash_consistency(ctx) -> None:
    """save(a, 1); save(a, 2); save(b, 3); teardown(), crashing at any point: every file under a checkpoint name
    that survives is complete and holds a step that was saved to it.

    A partial file under the final name is what a resume would load.

    Reader: target. Every surviving name is read with a fresh instance of the target: a partial file, or a
    directory without its metadata, does not load.
    """
    io, calls = ctx.new_io(), Calls()
    calls("save a 1", io.save_checkpoint, checkpoint(1), ctx.path("a.ckpt"))
    calls("save a 2", io.save_checkpoint, checkpoint(2), ctx.path("a.ckpt"))
    calls("save b 3", io.save_checkpoint, checkpoint(3), ctx.path("b.ckpt"))
    calls("teardown", io.teardown)
    calls.raise_first()
    expect_files(ctx, {"a.ckpt": 2, "b.ckpt": 3})


SAVED = {"a.ckpt": (1, 2), "b.ckpt": (3,)}


def crash_consistency_recovery(ctx) -> None:
    for name in ckpt_names(ctx.directory):
        step = load_step(ctx, ctx.path(name))  # Incomplete: a partial checkpoint under the final name
        if step not in SAVED.get(name, ()):
            raise AssertionError(f"{name} holds step {step}, which was never saved to it")


def resume_last(ctx) -> None:
    """ModelCheckpoint's call sequence with save_last (save step=n, save last, remove step=n-1, for n = 1..3),
    crashing at any point: resuming from "last" never loads a partial or torn file.

    Reader: target. The resume reads last.ckpt with a fresh instance of the target, as a Trainer given that IO
    would.
    """
    io, calls = ctx.new_io(), Calls()
    for n in (1, 2, 3):
        calls(f"save step={n}", io.save_checkpoint, checkpoint(n), ctx.path(f"step={n}.ckpt"))
        calls("save last", io.save_checkpoint, checkpoint(n), ctx.path("last.ckpt"))
        if n > 1:
            calls(f"remove step={n - 1}", io.remove_checkpoint, ctx.path(f"step={n - 1}.ckpt"))
    calls("teardown", io.teardown)
    calls.raise_first()
    expect_files(ctx, {"step=3.ckpt": 3, "last.ckpt": 3})


def resume_last_recovery(ctx) -> None:
    """What ``Trainer.fit(ckpt_path="last")`` does: pick last.ckpt if it exists and load it with the checkpoint IO
    (a fresh instance of the target); a checkpoint that does not load completely would crash (or corrupt) the
    resumed run."""
    if "last.ckpt" not in ckpt_names(ctx.directory):
        return  # Lightning starts from scratch: nothing partial was picked
    try:
        step = load_step(ctx, ctx.path("last.ckpt"))
    except Incomplete as exc:
        raise Incomplete(f"resume from last.ckpt fails: {exc}") from None
    if step not in (1, 2, 3):
        raise Incomplete(f"last.ckpt holds a step that was never saved ({step!r})")
