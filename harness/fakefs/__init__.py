"""racecheck fake filesystem (see issue 3)."""
