"""Exception types that racecheck reports or raises; one place so every layer agrees on them."""

from __future__ import annotations

__racecheck_engine__ = True


class RacecheckError(Exception):
    """Base class of racecheck's own errors."""


class TokenError(RacecheckError, ValueError):
    """A schedule token is malformed, from another tool or version, or recorded for another test."""


class ForeignTokenError(TokenError):
    """A sound token recorded for another test function than the one replayed: ``test`` is the function replayed
    (``module.qualname``), ``owner`` the function the token was recorded for where it could be found (a function of
    the replayed test's module whose name matches the token's hash), else None."""

    def __init__(self, message: str, test: str, owner: str | None = None) -> None:
        super().__init__(message)
        self.test = test
        self.owner = owner


class ConfigError(RacecheckError, ValueError, TypeError):
    """A ``Config`` field given a value it does not allow: one line naming the field, the value and what is allowed
    (``field``, ``value``, ``allowed``). A ValueError and a TypeError both, as a bad value was refused before."""

    def __init__(self, field: str, value: object, allowed: str) -> None:
        shown = repr(value)
        if len(shown) > 80:
            shown = shown[:77] + "..."
        super().__init__(f"{field} must be {allowed}, not {shown}")
        self.field = field
        self.value = value
        self.allowed = allowed

    def __reduce__(self):  # noqa: ANN204 - crosses to worker processes by its words, the value as text
        return (ConfigError, (self.field, repr(self.value), self.allowed))


class ReplayDivergence(RacecheckError):
    """The code under test did not follow a recorded schedule: it is nondeterministic outside racecheck's control
    (an uninstrumented thread, real time, unseeded randomness, or the code changed since the token was recorded).

    A failure of the code under test (exit 1 in the CLI), not bad input: the token itself was fine. Deliberately not
    a TokenError. The message says at which step, which thread and operation the schedule expected, what ran
    instead, and the likely cause."""


class DataRaceError(RacecheckError):
    """Two threads made conflicting accesses to one attribute, item, global or file that no synchronisation ordered
    (with ``data_races="fail"``, this fails the schedule where it showed); the message names both accesses."""


class Deadlock(RacecheckError):
    """No controlled thread can run while some are unfinished; the message says who waits on what."""


class UncontrolledBlocking(RacecheckError):
    """A controlled thread blocked (or spun) on something racecheck does not control; the message says where."""


class StepLimitExceeded(RacecheckError):
    """A schedule ran more scheduling steps than allowed: a livelock, or a workload larger than ``max_steps``."""


class InternalError(RacecheckError):
    """racecheck itself failed: a strategy's bug, a divergence inside the search's own replay, an exception raised by
    the engine's code between schedules. Never a verdict on the code under test: ``explore``/``replay`` raise it
    (the CLI exits 3, the pytest plugin reports an error, not a failure). ``traceback`` is the original one, as text,
    and the message ends with it, so a report of the bug carries where it happened."""

    def __init__(self, message: str, traceback: str = "") -> None:
        super().__init__(f"{message}\n{traceback}".rstrip() if traceback else message)
        self.summary = message
        self.traceback = traceback

    @classmethod
    def of(cls, exc: BaseException, where: str = "the search") -> InternalError:
        """``exc``, raised by racecheck's own code in ``where``, as racecheck's error (itself if it already is)."""
        if isinstance(exc, InternalError):
            return exc
        import traceback

        text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        return cls(f"racecheck internal error in {where} (a bug in racecheck, not in the code under test): "
                   f"{type(exc).__name__}: {exc}", text)


class UserCallbackError(Exception):
    """An exception of the user's own callback (``progress=``) that the engine calls between schedules: wrapped on
    its way through racecheck's code so it is not taken for racecheck's ``InternalError``; the search raises
    ``original`` again, unchanged."""

    def __init__(self, original: BaseException) -> None:
        super().__init__(str(original))
        self.original = original


def user_callback(callback, *args):  # noqa: ANN001, ANN201 - any callable, any result
    """``callback(*args)``, its exceptions marked as the user's own (``UserCallbackError``)."""
    try:
        return callback(*args)
    except Exception as exc:
        raise UserCallbackError(exc) from exc


class Crashed(BaseException):
    """Raised in the thread that triggered a simulated crash (power loss); unwinds it without running handlers
    meant for ordinary exceptions. Not a failure by itself: the run stops and recovery may run on the survivor."""


class Abort(BaseException):
    """Raised in a controlled thread to unwind it when its run is being stopped (a failure in another thread, a
    deadlock, teardown). Engine internal: the thread's controlled body catches it, so it never reaches the user. A
    ``BaseException``, so handlers in the code under test meant for ordinary exceptions do not catch it."""
