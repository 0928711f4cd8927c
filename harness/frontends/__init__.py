"""What users drive: the CLI, parallel runs (--jobs, execnet --tx) and the pytest plugin's engine side.
Imports everything below it; nothing imports it but the entry points."""
