"""A library that does work on its first call in a process, as megfile loads its configuration: the first call of
``settings()`` builds the configuration (many reads and writes of plain memory, each a scheduling point), every
later call returns it. A token recorded after that first call must replay in a fresh process too, where the
replayed schedule would otherwise be the one that builds it."""

_settings = None


def _load() -> dict:
    loaded = {}
    for number, name in enumerate(("endpoint", "retries", "timeout", "region", "profile")):
        loaded[name] = f"{name}-{number}"
        loaded.setdefault("order", []).append(name)
    return loaded


def settings() -> dict:
    global _settings
    if _settings is None:
        _settings = _load()
    return _settings
