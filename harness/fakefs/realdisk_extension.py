"""Real-disk files as scheduling points, as an engine extension (``files=True``, the default, and no ``fs=``): the
engine imports this module the first time a Config has ``files`` (``racecheck.runtime.declare_provider``) and
registers its ``extension``; the work is ``racecheck.fakefs.realdisk``'s. A module of its own because activating
the stand-ins (``activation``) imports the modules that call ``realdisk``.
"""

from __future__ import annotations

from typing import Any

from racecheck.fakefs import activation, pycompat
from racecheck.fakefs.realdisk import RESOURCE, DiskRun, stale_files
from racecheck.runtime import RunContract

__racecheck_engine__ = True


class _Extension:
    """Real-disk files as points: active with ``files=True`` (the default) and no ``fs=``."""

    name = "files"

    def active(self, config: Any) -> bool:
        return bool(getattr(config, "files", False)) and config.fs is None

    def modules(self, config: Any) -> list[str]:
        activation.activate_stand_ins()  # their swaps include the "files" group
        return list(pycompat.pathlib_modules())

    def config_key(self, config: Any) -> str:
        return "files"

    def begin_run(self, run: RunContract, config: Any) -> None:
        run.resources[RESOURCE] = DiskRun(bool(config.check_determinism))

    def end_run(self, run: RunContract, crashed: bool) -> None:
        pass

    def compare_runs(self, first: Any, second: Any) -> str | None:
        """Whether the second run of a schedule found a real file other than the first did (``stale_files``)."""
        return stale_files(first, second)


extension = _Extension()  # registered by the engine when a Config has files= (racecheck.runtime.declare_provider)
