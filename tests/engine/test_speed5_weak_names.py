"""A name does not keep its object alive (``memory_names.Watch``, issue 47): the object dies where the program
drops it, inside the run, and an address it leaves to another object is not read as its name.

Before, every named object lived until the run ended: a finalizer's accesses happened after the run in a run that
had named the object and inside it in one that had not (a sampled run whose unwatched code made it), so the rerun
watching everything left the sampled run's decisions (the stock micro workload's first rerun, at its 34th)."""

import gc
import weakref

import racecheck
import speed5_programs
from racecheck.control.memory_names import Watch
from racecheck.runtime.access import WRITE


def test_a_named_object_dies_when_the_program_drops_it():
    watch = Watch()
    box = speed5_programs.Box()
    alive = weakref.ref(box)
    assert watch.attribute(box, "value", WRITE)[0].obj.name == "Box#1.value"
    del box
    assert alive() is None
    assert watch.names == {} and watch.memo == {}


def test_an_address_left_by_a_dead_object_gets_a_name_of_its_own():
    watch = Watch()
    seen_ids, names = set(), []
    reused = False
    gc.disable()
    try:
        for _ in range(40):
            box = speed5_programs.Box()
            reused = reused or id(box) in seen_ids
            seen_ids.add(id(box))
            names.append(watch.attribute(box, "value", WRITE)[0].obj.name)
            del box
    finally:
        gc.enable()
    assert reused, "CPython reuses a freed object's memory at once: the case this test is for"
    assert names == [f"Box#{n}.value" for n in range(1, 41)]


def test_objects_without_weak_references_are_kept_until_the_run_ends():
    watch = Watch()
    names = []
    for _ in range(10):
        held = {}
        names.append(watch.item(held, "k", WRITE)[0].obj.name)
        del held
    assert names == [f"dict#{n}['k']" for n in range(1, 11)]
    assert len(watch.names) == 10


def test_a_finalizer_runs_where_the_object_is_dropped_in_every_schedule():
    result = racecheck.explore(speed5_programs.finalizer_inside_the_run, schedules=20, memory=True)
    assert result.ok, result.summary()


def test_a_watch_with_weak_names_goes_without_the_collector():
    gc.disable()
    try:
        watch = Watch()
        box = speed5_programs.Box()
        watch.attribute(box, "value", WRITE)
        gone = weakref.ref(watch)
        del watch
        assert gone() is None, "a reference cycle keeps the run's watch (and what it holds) until a collection"
        del box  # its weak name's callback finds no watch: nothing to forget
    finally:
        gc.enable()
