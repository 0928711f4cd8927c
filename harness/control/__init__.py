"""How unmodified code comes under control: control by default (``autocontrol``: every module, no list), name
swapping, module facades, thread wrapping, line points, waits on other processes and temporary-file tracking.
Imports the runtime and the stand-ins, nothing above.

Importing the package registers the sync stand-ins' swaps (``sync_facades``): every user of the control layer
(the explorer, the fake filesystem) then has them, and has them before it registers swaps of its own, which take
precedence for the same real object (the fake filesystem's ``os`` facade over the one that only virtualises
``getpid``).
"""

from racecheck.control import sync_facades  # noqa: F401 - registers the stand-ins' swaps on import
