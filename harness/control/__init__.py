"""How unmodified code comes under control: name swapping, module facades, thread wrapping, line points,
waits on other processes and temporary-file tracking. Imports the runtime and the stand-ins, nothing above."""
