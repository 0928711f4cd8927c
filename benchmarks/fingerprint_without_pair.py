"""``fingerprint.py`` with the racing pair's swapped runs left out: a change to the pair search alone keeps its lines.

    python benchmarks/fingerprint_without_pair.py [--schedules 60] [--seed 3]

``fingerprint.py`` hashes every run, the pair search's swaps too, so a change to which swaps the search tries
changes its lines even when no explored schedule and no shrink changed. This runs it unchanged (its own source
lines show in the traces it hashes, so it is not edited) with ``findings.racing_pair`` naming nothing.
"""

from __future__ import annotations

import os
import runpy
import sys

from racecheck.search import findings

if __name__ == "__main__":
    findings.racing_pair = lambda *_args, **_kw: None
    sys.argv[0] = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fingerprint.py")
    runpy.run_path(sys.argv[0], run_name="__main__")
