"""The KempnerForge-style manager with DCP's fsyncs off, for the dpor proof configuration's teeth: a module kept
real (``dcp_state.PROOF_EXCLUDE``) calls the real ``os.fsync`` on the fake filesystem's descriptor, so only savers
with ``sync_files=False`` run under it; the manager's bug (``latest`` swapped while the save is pending) is not
about fsync."""

from __future__ import annotations

from typing import Any

from racecheck.fixed_impl import dcp_state
from racecheck.scenarios.manager_storage import DcpWriter
from racecheck.scenarios.naive_managers import KempnerStyleManager
from racecheck.scenarios.naive_managers import __racecheck_instrument__ as _naive_instrument

__racecheck_instrument__ = ["racecheck.scenarios.naive_managers", *_naive_instrument]


class NoSyncDcpWriter(DcpWriter):
    def start(self, state: dict[str, Any], path: str) -> Any:
        return dcp_state.async_save(state, path, sync_files=False)


class KempnerNoSyncManager(KempnerStyleManager):
    writer_class = NoSyncDcpWriter
