"""The KempnerForge-style manager with DCP's fsyncs off, for the dpor proof configuration's teeth: a module kept
real (``dcp_state.PROOF_EXCLUDE``) calls the real ``os.fsync`` on the fake filesystem's descriptor, so only savers
with ``sync_files=False`` run under it; the manager's bug (``latest`` swapped while the save is pending) is not
about fsync."""

from __future__ import annotations

from typing import Any

from racecheck.fixed_impl import DurableCheckpointManager, dcp_state
from racecheck.scenarios.manager_storage import DcpWriter
from racecheck.scenarios.naive_managers import KempnerStyleManager
from racecheck.scenarios.naive_managers import __racecheck_instrument__ as _naive_instrument

__racecheck_instrument__ = ["racecheck.scenarios.naive_managers", "racecheck.fixed_impl.checkpoint_manager",
                            *_naive_instrument]


class NoSyncDcpWriter(DcpWriter):
    def start(self, state: dict[str, Any], path: str) -> Any:
        return dcp_state.async_save(state, path, sync_files=False)


class KempnerNoSyncManager(KempnerStyleManager):
    writer_class = NoSyncDcpWriter


class DurableNoSyncManager(DurableCheckpointManager):
    """The fixed manager with DCP's own fsyncs off (``FileSystemWriter(sync_files=False)``); its own fsync of the
    whole checkpoint before the tracker moves (rule 2) stays. What the dpor proof over real DCP runs: a module kept
    real by ``dcp_state.PROOF_EXCLUDE`` cannot fsync a fake descriptor. (The fixed manager itself keeps DCP's
    default writer: handing ``async_save`` a ``storage_writer`` makes it ask ``isinstance(writer, AsyncStager)``
    of a typing_extensions Protocol, which raised a TypeError under control after other explorations in the same
    process; gone since typing_extensions is unwatched: test_det48_replay.py.)"""

    def start_save(self, state: dict[str, Any], path: str) -> Any:
        return dcp_state.async_save(state, path, no_dist=self.world_size > 1, sync_files=False)
