"""The run's side of the extension contract (``racecheck.runtime.RunContract``) is what ``Run`` offers: every
member the Protocol writes down exists on a run, and every method takes the parameters the Protocol names."""

import inspect

from racecheck.runtime import RunContract, ThreadContract
from racecheck.runtime.chooser import Chooser
from racecheck.runtime.records import ThreadRecord
from racecheck.runtime.scheduler import Run


def _members(protocol):
    methods = {name for name, value in vars(protocol).items()
               if inspect.isfunction(value) and not name.startswith("__")}
    return methods, set(protocol.__annotations__)


def test_run_offers_every_member_of_the_contract():
    run = Run(chooser=Chooser())
    methods, attributes = _members(RunContract)
    assert methods and attributes
    for name in attributes:
        assert hasattr(run, name), name
    for name in methods:
        offered = inspect.signature(getattr(Run, name))
        written = inspect.signature(getattr(RunContract, name))
        assert list(offered.parameters) == list(written.parameters), name


def test_thread_records_offer_what_the_control_layer_reads():
    rec = ThreadRecord(0, None, None)
    for name in ThreadContract.__annotations__:
        assert hasattr(rec, name), name
