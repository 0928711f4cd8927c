"""The one relation (``racecheck.runtime.relation``): total over Kind x Kind x ObjKind, consistent, and the only
source its consumers read, so that a relation put in force with ``planted`` changes what each of them decides."""

from __future__ import annotations

import pytest
from racecheck.runtime import relation
from racecheck.runtime.access import ANYTHING_OBJ, MEMORY_OBJ, file_obj, memory, on, thread_obj
from racecheck.runtime.relation import (
    ALL_KINDS,
    ALL_OBJECTS,
    RELATION,
    ROWS,
    Order,
    Relation,
    Role,
    Row,
    commute,
)
from racecheck.runtime.steps import Access, Kind, Obj, ObjKind
from racecheck.search import dependency, race_order


def test_every_combination_of_kinds_and_object_kinds_has_a_row():
    for obj_kind in ObjKind:
        for earlier in Kind:
            for later in Kind:
                row = RELATION.source[(later, earlier, obj_kind)]
                assert earlier in row.earlier and later in row.later and obj_kind in row.objects
                assert RELATION.order(later, earlier, obj_kind) is row.order


def test_a_relation_whose_rows_leave_a_combination_out_cannot_be_built():
    partial = [row for row in ROWS if row.earlier != ALL_KINDS]  # the last row, which covers the rest, left out
    with pytest.raises(ValueError, match="no row for"):
        Relation(partial)
    narrow = Row(ALL_KINDS, ALL_KINDS, ALL_OBJECTS - {ObjKind.FILE}, Order.REVERSIBLE, "all but files", "planted")
    with pytest.raises(ValueError, match="on file"):
        Relation([*partial, narrow])


def test_every_kind_of_object_has_a_data_race_role():
    assert set(RELATION.roles) == set(ObjKind)
    with pytest.raises(ValueError, match="no data-race role"):
        Relation(roles={k: Role.SYNC for k in ObjKind if k is not ObjKind.FILE})


def test_conflict_is_symmetric_and_one_way_orders_only_enable():
    for obj_kind in ObjKind:
        for a in Kind:
            for b in Kind:
                assert bool(RELATION.order(b, a, obj_kind)) == bool(RELATION.order(a, b, obj_kind))
                if RELATION.order(b, a, obj_kind) is Order.ONE_WAY:
                    assert (a, b) in {(Kind.START, Kind.BEGIN), (Kind.END, Kind.JOIN)}


def test_wildcards_cover_what_they_say_whatever_the_kinds():
    lock = Obj(ObjKind.LOCK, "Lock#1")
    piece = memory("Box#1.x")
    for kind in (Kind.READ, Kind.ACQUIRE, Kind.WRITE):
        assert RELATION.conflict(Access(ANYTHING_OBJ, Kind.WRITE), Access(lock, kind))
        assert RELATION.conflict(Access(MEMORY_OBJ, Kind.WRITE), Access(piece, kind))
        assert not RELATION.conflict(Access(MEMORY_OBJ, Kind.WRITE), Access(lock, kind))
    assert not RELATION.conflict(Access(piece, Kind.READ), Access(memory("Box#1.y"), Kind.WRITE))


def test_commuting_runs_are_one_object_per_group():
    reads = RELATION.commuting_run(Kind.READ, ObjKind.FILE)
    assert reads == {Kind.READ, Kind.LIST} and reads is RELATION.commuting_run(Kind.LIST, ObjKind.MEMORY)
    assert RELATION.commuting_run(Kind.WRITE, ObjKind.MEMORY) is None
    assert RELATION.commuting_run(Kind.BEGIN, ObjKind.THREAD) is None  # commutes with a join, not with itself


def test_objects_are_interned_typed_and_keep_their_text():
    import copy
    import pickle

    assert Obj(ObjKind.FILE, "/a") is file_obj("/a") and str(file_obj("/a")) == "file /a"
    assert str(thread_obj(1)) == "thread T1" and str(Obj(ObjKind.POINT, "x")) == "on x"
    assert pickle.loads(pickle.dumps(file_obj("/a"))) is file_obj("/a")
    assert copy.deepcopy(on(file_obj("/a"), Kind.READ))[0].obj is file_obj("/a")
    assert Obj(ObjKind.LOCK, "L", engine=True) is not Obj(ObjKind.LOCK, "L")
    assert f"{Kind.READ}" == "read" and {"read": 1}[Kind.READ] == 1
    with pytest.raises(AttributeError):
        file_obj("/a").name = "/b"


def test_a_planted_relation_reaches_the_consumers():
    write = Access(memory("Box#1.x"), Kind.WRITE)
    read = Access(memory("Box#1.x"), Kind.READ)
    assert dependency.dependent((write,), (read,))
    with relation.planted(RELATION.with_rows(*commute(Kind.READ, Kind.WRITE))):
        assert not dependency.dependent((write,), (read,))
        assert dependency.conflicts((write,), (read,)) == frozenset()
    assert relation.active() is RELATION


def test_refinements_apply_exactly_where_their_rows_say_for_every_combination():
    # the two rules the table cannot express (paths, a queue's order) are rows of the relation too: walked over
    # Kind x Kind x ObjKind, each holds only on its kinds of object, for its kinds of access
    below, fifo = RELATION.refined["below"], RELATION.refined["fifo"]
    for obj_kind in ObjKind:
        obj = Obj(obj_kind, f"/refined/{obj_kind.value}")
        for first in Kind:
            for second in Kind:
                made = (Access(obj, first, "/d"),)
                looker = (Access(obj, second, "/d/a"),)
                expected = obj_kind in below.objects and first in below.first and second in below.second
                assert RELATION.looks_below(made, looker, obj) == expected, (first, second, obj_kind)
                put, get = (Access(obj, first),), (Access(obj, second),)
                expected = obj_kind in fifo.objects and first in fifo.first and second in fifo.second
                assert RELATION.fifo_commutes(obj, put, get, 0, 1) == expected, (first, second, obj_kind)
                assert not RELATION.fifo_commutes(obj, put, get, 1, 1)  # the item came from this put or a later one


def test_every_refinement_is_a_typed_row_with_its_reason():
    assert {rule.name for rule in RELATION.refinements} == {"below", "fifo"}
    for rule in RELATION.refinements:
        assert rule.objects <= ALL_OBJECTS and rule.first and rule.second and rule.pair and rule.reason


def test_a_relation_without_refinements_reaches_the_racing_pair():
    # the racing pair's isolation check reads the refinements from the relation only
    queue = Obj(ObjKind.FIFO_QUEUE, "WorkQueue#1")
    put, get = (Access(queue, Kind.PUT),), (Access(queue, Kind.GET),)
    directory = file_obj("/d")
    mkdir = (Access(directory, Kind.CREATE, "/d"),)
    stat = (Access(directory, Kind.READ, "/d"), Access(file_obj("/d/a"), Kind.READ, "/d/a"))
    assert not race_order.reorders(put, get, {queue: (1, 0)})  # the get took the item put before
    assert not race_order.reorders(mkdir, stat, {})
    with relation.planted(RELATION.without_refinements()):
        assert race_order.queue_counts([]) == []
        assert race_order.reorders(put, get, {queue: (1, 0)})
        assert race_order.reorders(mkdir, stat, {})
