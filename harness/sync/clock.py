"""Time on the virtual clock: ``sleep`` lets virtual time pass for the caller (``sleep(0)`` is a yielding point);
``monotonic``/``perf_counter``/``time`` and their ``_ns`` forms read the run's clock, which advances only when every
thread waits on time, so timeouts are deterministic and a test that sleeps an hour runs instantly."""

from __future__ import annotations

import time as _real_time
from typing import Any

from racecheck import runtime

__racecheck_engine__ = True


def sleep(seconds: float) -> None:
    run = runtime.current_run()
    if run is None:
        _real_time.sleep(seconds)
    else:
        run.sleep(seconds)


def _clock(real: Any, scale: int = 1, offset: bool = False, integer: bool = False) -> Any:
    def read() -> Any:
        run = runtime.current_run()
        if run is None:
            return real()
        value = run.now() + (run.config.epoch if offset else 0.0)
        return int(round(value * scale)) if integer else value

    read.__name__ = real.__name__
    read.__qualname__ = real.__name__
    read.__doc__ = f"Virtual {real.__name__} inside a racecheck run (deterministic), the real clock elsewhere."
    return read


monotonic = _clock(_real_time.monotonic)
monotonic_ns = _clock(_real_time.monotonic_ns, 10**9, integer=True)
perf_counter = _clock(_real_time.perf_counter)
perf_counter_ns = _clock(_real_time.perf_counter_ns, 10**9, integer=True)
time = _clock(_real_time.time, offset=True)
time_ns = _clock(_real_time.time_ns, 10**9, offset=True, integer=True)
