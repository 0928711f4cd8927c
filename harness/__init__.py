"""racecheck: make thread races reproducible on demand (engine; knows nothing of Lightning)."""

from racecheck.runtime import point

__all__ = ["point"]
