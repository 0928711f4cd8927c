"""``python -m racecheck``: the racecheck command, for environments where the console script is not on PATH."""

from racecheck.frontends.cli import main

main()
