"""docs/dependency.md's tables of the relation against ``racecheck.runtime.relation``: the doc shows what the code
decides.

    python tests/house/relation_doc.py            # print what differs
    python tests/house/relation_doc.py --write    # rewrite the three tables in place from the relation

Four tables, each under a header line this module knows: the rows of the relation (``ROWS``, first match wins),
what each wildcard covers (``WILDCARDS``), each kind of object's role for the data-race finder (``ROLES``), and the
refinements the table cannot express (``REFINEMENTS``).
``tests/house/test_relation_doc.py`` fails while the doc and the code differ. Exit status: 0 when they matched,
1 when they did not.
"""

from __future__ import annotations

import sys
from pathlib import Path

from racecheck.runtime.relation import ALL_KINDS, ALL_OBJECTS, RELATION, Relation

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "dependency.md"
ROWS_HEADER = "| earlier | later | on | order | pair | reason |"
WILDCARDS_HEADER = "| wildcard | conflicts with, whatever the kinds |"
ROLES_HEADER = "| role for data races | kinds of object |"
REFINEMENTS_HEADER = "| refinement | on | one step only | the other only | pair | reason |"


def _kinds(kinds: frozenset, everything: frozenset) -> str:
    if kinds == everything:
        return "any"
    return ", ".join(f"`{k.value}`" for k in sorted(kinds, key=lambda k: k.value))


def tables(relation: Relation = RELATION) -> dict[str, list[str]]:
    """Header -> the table's lines (header, separator, rows) as the doc must show them."""
    rows = [ROWS_HEADER, "| --- | --- | --- | --- | --- | --- |"]
    for row in relation.rows:
        rows.append(f"| {_kinds(row.earlier, ALL_KINDS)} | {_kinds(row.later, ALL_KINDS)} | "
                    f"{_kinds(row.objects, ALL_OBJECTS)} | {row.order.name.lower().replace('_', '-')} | "
                    f"{row.pair} | {row.reason} |")
    wild = [WILDCARDS_HEADER, "| --- | --- |"]
    for kind, covered in relation.wildcards.items():
        wild.append(f"| `{kind.value}` | {_kinds(covered, ALL_OBJECTS)} |")
    roles = [ROLES_HEADER, "| --- | --- |"]
    for role in sorted(set(relation.roles.values())):
        members = frozenset(k for k, r in relation.roles.items() if r == role)
        roles.append(f"| {role.name.lower()} | {_kinds(members, ALL_OBJECTS)} |")
    refined = [REFINEMENTS_HEADER, "| --- | --- | --- | --- | --- | --- |"]
    for rule in relation.refinements:
        refined.append(f"| `{rule.name}` | {_kinds(rule.objects, ALL_OBJECTS)} | {_kinds(rule.first, ALL_KINDS)} | "
                       f"{_kinds(rule.second, ALL_KINDS)} | {rule.pair} | {rule.reason} |")
    return {ROWS_HEADER: rows, WILDCARDS_HEADER: wild, ROLES_HEADER: roles, REFINEMENTS_HEADER: refined}


def span(lines: list[str], header: str) -> tuple[int, int]:
    start = next((i for i, line in enumerate(lines) if line.strip() == header), None)
    if start is None:
        raise ValueError(f"docs/dependency.md has no table whose header is {header!r}")
    end = start + 1
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    return start, end


def differences(text: str, relation: Relation = RELATION) -> list[str]:
    """The tables whose lines in ``text`` differ from the relation's, each as a short description."""
    lines = text.splitlines()
    out = []
    for header, wanted in tables(relation).items():
        start, end = span(lines, header)
        if lines[start:end] != wanted:
            out.append(f"table {header!r} differs from racecheck.runtime.relation")
    return out


def rewrite(text: str, relation: Relation = RELATION) -> str:
    lines = text.splitlines()
    for header, wanted in tables(relation).items():
        start, end = span(lines, header)
        lines[start:end] = wanted
    return "\n".join(lines) + "\n"


def main() -> int:
    text = DOC.read_text()
    found = differences(text)
    if "--write" in sys.argv[1:]:
        DOC.write_text(rewrite(text))
    for line in found:
        print(line)
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
