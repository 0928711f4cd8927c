"""Stock Lightning checkpoint IO runs unmodified over the fake: via racefs:// and via a mounted local path."""

from __future__ import annotations

import io

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("lightning")

import fsspec  # noqa: E402
import racecheck.fakefs as fakefs  # noqa: E402
from fakerun_helpers import bound_run  # noqa: E402
from lightning.fabric.utilities.cloud_io import get_filesystem  # noqa: E402
from lightning.pytorch.plugins.io.torch_plugin import TorchCheckpointIO  # noqa: E402
from racecheck.fakefs.integrations.fsspec_adapter import RaceFileSystem  # noqa: E402

CKPT = {"state_dict": {"w": torch.arange(6.0)}, "epoch": 3}


def _roundtrip(io_plugin: TorchCheckpointIO, path: str) -> None:
    io_plugin.save_checkpoint(CKPT, path)
    loaded = io_plugin.load_checkpoint(path, weights_only=True)
    assert loaded["epoch"] == 3 and torch.equal(loaded["state_dict"]["w"], CKPT["state_dict"]["w"])
    io_plugin.remove_checkpoint(path)


def test_get_filesystem_picks_racefs():
    assert isinstance(get_filesystem("racefs://ckpts/a.ckpt"), RaceFileSystem)
    fs, path = fsspec.url_to_fs("racefs://ckpts/a.ckpt")
    assert isinstance(fs, RaceFileSystem) and path == "/racefs/ckpts/a.ckpt"


def test_torch_checkpoint_io_roundtrip_over_racefs_standalone():
    store = fakefs.reset_default_store()
    _roundtrip(TorchCheckpointIO(), "racefs://ckpts/epoch=0.ckpt")
    assert store.files() == [] and store.open_handles() == []
    assert any(op.startswith("rename /racefs/ckpts/.epoch=0.ckpt.") for op in store.log), "transaction commit"


def test_torch_checkpoint_io_roundtrip_over_racefs_in_run():
    with bound_run("posix") as run:
        _roundtrip(TorchCheckpointIO(), "racefs://ckpts/epoch=0.ckpt")
        assert run.resources["fakefs"].files() == []
    assert any(p.startswith("fs.write /racefs/ckpts/") for p in run.points)


def test_torch_checkpoint_io_roundtrip_over_mounted_local_path(tmp_path):
    with bound_run("posix", everywhere=True) as run:
        store = run.resources["fakefs"]
        path = f"{fakefs.root()}/ckpts/epoch=0-step=1.ckpt"
        plugin = TorchCheckpointIO()
        plugin.save_checkpoint(CKPT, path)
        assert [f[0] for f in store.files()] == [path]
        loaded = plugin.load_checkpoint(path, weights_only=True)
        assert torch.equal(loaded["state_dict"]["w"], CKPT["state_dict"]["w"])
        plugin.remove_checkpoint(path)
        assert store.files() == []
        # torch.save/torch.load by path go to the store too: control by default reaches torch.serialization
        torch.save(CKPT, f"{fakefs.root()}/direct.pt")
        assert torch.load(f"{fakefs.root()}/direct.pt", weights_only=True)["epoch"] == 3
        # a path outside the mount still reaches the real disk through the same controlled code
        real = tmp_path / "real.ckpt"
        plugin.save_checkpoint(CKPT, str(real))
        assert real.exists()
    assert any(p.startswith("fs.rename /racefs/.tmp/") for p in run.points), "LocalFileSystem transaction"
    import os

    assert not os.path.exists("/racefs"), "nothing under the mount root reached the real disk"


def _lightning_18_save(checkpoint: dict, filepath: str) -> None:
    """How Lightning 1.8's atomic_save wrote: torch.save into BytesIO, then a plain open/write."""
    buffer = io.BytesIO()
    torch.save(checkpoint, buffer)
    with open(filepath, "wb") as f:  # noqa: PTH123 - the builtin open is the fake's during the run
        f.write(buffer.getvalue()[:10])
        # the main thread's top-k eviction runs here, while the worker still holds the file open
        fsspec.implementations.local.LocalFileSystem().rm(filepath, recursive=True)
        f.write(buffer.getvalue()[10:])


def test_lightning_18_delete_while_writing_gives_winerror_32(monkeypatch):
    import fsspec.implementations.local  # noqa: F401

    with bound_run("windows", everywhere=True):
        path = f"{fakefs.root()}/epoch=0-step=1.ckpt"
        with pytest.raises(PermissionError) as info:
            _lightning_18_save(CKPT, path)
    exc = info.value
    assert exc.errno == 13 and exc.winerror == 32
    assert str(exc) == (
        "[WinError 32] The process cannot access the file because it is being used by another process: "
        f"'{path}'"
    )
    assert type(exc).__name__ == "PermissionError"


def test_lightning_18_delete_while_writing_posix_orphans_the_write():
    with bound_run("posix", everywhere=True) as run:
        path = f"{fakefs.root()}/epoch=0-step=1.ckpt"
        _lightning_18_save(CKPT, path)
        assert run.resources["fakefs"].files() == []  # the write went into the unlinked inode
