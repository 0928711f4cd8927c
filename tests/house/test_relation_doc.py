"""docs/dependency.md shows the relation the code decides with (``tests/house/relation_doc.py``)."""

from __future__ import annotations

import relation_doc
from racecheck.runtime.relation import RELATION, commute
from racecheck.runtime.steps import Kind


def test_the_docs_tables_are_the_relations():
    assert relation_doc.differences(relation_doc.DOC.read_text()) == []


def test_a_relation_that_differs_from_the_doc_is_told():
    planted = RELATION.with_rows(*commute(Kind.READ, Kind.WRITE))
    assert relation_doc.differences(relation_doc.DOC.read_text(), planted)
