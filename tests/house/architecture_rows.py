"""The module map in docs/architecture.md against the tree: which rows are missing, which are extra.

    python tests/house/architecture_rows.py            # print the rows missing from the map and the extra ones
    python tests/house/architecture_rows.py --write    # rewrite the map's table in place to match the tree

The map is one Markdown table, ``| module | layer | job |``, one row per ``.py`` file under ``harness/``,
``fixed_impl/`` and ``scenarios/`` (``__pycache__`` excluded), the path relative to the repository root in
backquotes. ``tests/house/test_architecture_doc.py`` fails while the table and the tree differ, or while a row's
layer is not the one ``tests/house/test_import_layers.py`` gives its module.

``--write`` keeps the job of every row that is still in the tree, adds a row for each new file (its job: the first
sentence of the module's docstring, to be edited into one short line by hand), drops rows whose file is gone,
fills in each row's layer, and orders the rows bottom layer first, then by path. Exit status: 0 when the table
already matched, 1 when it did not (the listing, or the rewrite, says what changed).
"""

from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"
SOURCE_DIRS = {"harness": "racecheck", "fixed_impl": "racecheck.fixed_impl", "scenarios": "racecheck.scenarios"}
HEADER = "| module | layer | job |"
ROW = re.compile(r"^\|\s*`(?P<path>[^`]+)`\s*\|\s*(?P<layer>[^|]*?)\s*\|\s*(?P<job>.*?)\s*\|\s*$")


@dataclass(frozen=True)
class Row:
    path: str
    layer: str
    job: str

    def render(self) -> str:
        return f"| `{self.path}` | {self.layer} | {self.job} |"


def tree_paths(root: Path = ROOT) -> set[str]:
    """Every module file of the three packages, as a path relative to the repository root (posix separators)."""
    found = set()
    for folder in SOURCE_DIRS:
        for path in (root / folder).rglob("*.py"):
            if "__pycache__" not in path.parts:
                found.add(path.relative_to(root).as_posix())
    return found


def module_name(path: str) -> str:
    """``harness/runtime/scheduler.py`` -> ``racecheck.runtime.scheduler``; a package's ``__init__`` is the package."""
    folder, _, rest = path.partition("/")
    parts = [p for p in rest[: -len(".py")].split("/") if p]
    if parts and parts[-1] == "__init__":
        parts.pop()
    return ".".join([SOURCE_DIRS[folder], *parts])


def _layers():
    """tests/house/test_import_layers.py, whose LAYERS table is the one definition of the layers."""
    here = str(Path(__file__).resolve().parent)
    if here not in sys.path:
        sys.path.insert(0, here)
    import test_import_layers  # late: it parses the whole package

    return test_import_layers


def layer_of(path: str) -> str:
    """The layer the import check assigns the module."""
    return _layers().layer_of(module_name(path))[1]


def layer_rank(layer: str) -> int:
    ranks = {name: rank for rank, name, _ in _layers().LAYERS}
    return ranks.get(layer, len(ranks) + 1)


def table_span(text: str) -> tuple[int, int]:
    """Line indices [start, end) of the map's table: its header, separator and rows."""
    lines = text.splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.strip() == HEADER)
    except StopIteration:
        raise ValueError(f"docs/architecture.md has no module map (a table whose header is {HEADER!r})") from None
    end = start + 1
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    return start, end


def table_rows(text: str) -> list[Row]:
    """The rows of the map, in document order. A table line that is not a row of a backquoted path is an error."""
    lines = text.splitlines()
    start, end = table_span(text)
    rows = []
    for line in lines[start + 2 : end]:
        match = ROW.match(line)
        if match is None:
            raise ValueError(f"not a module-map row (| `path` | layer | job |): {line!r}")
        rows.append(Row(match["path"], match["layer"], match["job"]))
    return rows


def first_sentence(path: str, root: Path = ROOT) -> str:
    doc = ast.get_docstring(ast.parse((root / path).read_text())) or ""
    text = " ".join(doc.split("\n\n")[0].split()).replace("``", "`")
    sentence = re.split(r"(?<=\.)\s", text, maxsplit=1)[0].rstrip(".")
    return sentence.replace("|", "\\|") or "(no docstring: say what it does)"


def diff(text: str, paths: set[str]) -> tuple[list[str], list[str], list[str]]:
    """(paths missing from the table, paths in the table but not in the tree, paths listed more than once)."""
    listed = [row.path for row in table_rows(text)]
    missing = sorted(paths - set(listed))
    extra = sorted(set(listed) - paths)
    duplicated = sorted({p for p in listed if listed.count(p) > 1})
    return missing, extra, duplicated


def rewritten(text: str, paths: set[str]) -> str:
    """The document with its table rebuilt from the tree, keeping the jobs of rows that are still there."""
    jobs = {row.path: row.job for row in table_rows(text)}
    rows = [Row(p, layer_of(p), jobs.get(p) or first_sentence(p)) for p in paths]
    rows.sort(key=lambda r: (layer_rank(r.layer), r.path))
    lines = text.splitlines()
    start, end = table_span(text)
    new = lines[: start + 2] + [row.render() for row in rows] + lines[end:]
    return "\n".join(new) + ("\n" if text.endswith("\n") else "")


def main(argv: list[str]) -> int:
    text = DOC.read_text()
    paths = tree_paths()
    missing, extra, duplicated = diff(text, paths)
    wrong_layer = [(row.path, row.layer, layer_of(row.path)) for row in table_rows(text)
                   if row.path in paths and row.layer != layer_of(row.path)]
    if "--write" in argv:
        new = rewritten(text, paths)
        if new != text:
            DOC.write_text(new)
            print(f"rewrote the module map: {len(missing)} row(s) added, {len(extra)} dropped; "
                  "edit the added rows' jobs into one short line each")
            return 1
        print("the module map matches the tree")
        return 0
    for path in missing:
        print(f"missing: {Row(path, layer_of(path), first_sentence(path)).render()}")
    for path in extra:
        print(f"extra:   {path} (no such file)")
    for path in duplicated:
        print(f"twice:   {path}")
    for path, said, actual in wrong_layer:
        print(f"layer:   {path} is in layer {actual!r}, the map says {said!r}")
    if not (missing or extra or duplicated or wrong_layer):
        print("the module map matches the tree")
        return 0
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
