"""The user docs stay true to the tree (issue 27).

The module map in docs/architecture.md lists exactly the modules under harness/, fixed_impl/ and scenarios/, each
with the layer the import check gives it, so the map cannot go stale (``python tests/house/architecture_rows.py``
prints what differs, ``--write`` rebuilds the table). Beyond the map: every module path and ``racecheck.*`` name the
README and docs/ mention exists, every relative link and anchor resolves, the README stays a newcomer's page, and
no user doc tells the story of how it got here (that is CHANGELOG.md's job).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import architecture_rows
import pytest
import test_import_layers

ROOT = architecture_rows.ROOT
DOC = architecture_rows.DOC
USER_DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])
LINKED_DOCS = [*USER_DOCS, ROOT / "CHANGELOG.md"]


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


# --- the module map ---------------------------------------------------------------------------------------------


def test_the_module_map_lists_every_module_once():
    missing, extra, duplicated = architecture_rows.diff(DOC.read_text(), architecture_rows.tree_paths())
    problems = [f"missing row: {architecture_rows.Row(p, architecture_rows.layer_of(p), '...').render()}"
                for p in missing]
    problems += [f"extra row (no such file): {p}" for p in extra]
    problems += [f"row listed twice: {p}" for p in duplicated]
    assert not problems, ("docs/architecture.md's module map and the tree differ; run "
                          "`python tests/house/architecture_rows.py --write` and give new rows a one-line job:\n"
                          + "\n".join(problems))


def test_each_row_names_its_modules_layer():
    paths = architecture_rows.tree_paths()
    wrong = [f"{row.path}: the map says {row.layer!r}, the import check says {architecture_rows.layer_of(row.path)!r}"
             for row in architecture_rows.table_rows(DOC.read_text())
             if row.path in paths and row.layer != architecture_rows.layer_of(row.path)]
    assert not wrong, "\n".join(wrong)


def test_each_row_says_what_its_module_is_for():
    empty = [row.path for row in architecture_rows.table_rows(DOC.read_text())
             if not row.job or row.job.startswith("(no docstring")]
    assert not empty, f"rows without a job: {empty}"


def test_the_rows_go_bottom_layer_first():
    ranks = [architecture_rows.layer_rank(row.layer) for row in architecture_rows.table_rows(DOC.read_text())]
    assert ranks == sorted(ranks), "the module map's rows are not in layer order (--write sorts them)"


def test_the_layers_table_names_the_layers_the_import_check_uses():
    text = DOC.read_text()
    section = text.split("## Layers", 1)[1].split("\n## ", 1)[0]
    named = {m.group(1) for m in re.finditer(r"^\|\s*\d+\s*\|\s*([\w-]+)\s*\|", section, re.M)}
    assert named == {layer for _, layer, _ in test_import_layers.LAYERS}


def test_the_check_sees_missing_extra_and_duplicated_rows():
    """The check itself can fail: a table with a row for a file that is not there, one listed twice, one left out."""
    text = ("# map\n\n| module | layer | job |\n| --- | --- | --- |\n"
            "| `harness/errors.py` | errors | exceptions |\n"
            "| `harness/errors.py` | errors | exceptions |\n"
            "| `harness/no_such_module.py` | runtime | nothing |\n\nafter\n")
    missing, extra, duplicated = architecture_rows.diff(text, {"harness/errors.py", "harness/config.py"})
    assert (missing, extra, duplicated) == (["harness/config.py"], ["harness/no_such_module.py"],
                                            ["harness/errors.py"])
    with pytest.raises(ValueError, match="not a module-map row"):
        architecture_rows.table_rows(text.replace("| `harness/errors.py` | errors | exceptions |\n", "| oops |\n", 1))


def test_module_names_map_to_the_import_names():
    assert architecture_rows.module_name("harness/runtime/scheduler.py") == "racecheck.runtime.scheduler"
    assert architecture_rows.module_name("harness/__init__.py") == "racecheck"
    assert architecture_rows.module_name("harness/frontends/cli/__init__.py") == "racecheck.frontends.cli"
    assert architecture_rows.module_name("fixed_impl/locked_async.py") == "racecheck.fixed_impl.locked_async"
    assert architecture_rows.module_name("scenarios/__init__.py") == "racecheck.scenarios"


# --- names, paths and links in the user docs --------------------------------------------------------------------

SOURCE_PATH = re.compile(r"(?<![\w/.-])((?:harness|fixed_impl|scenarios)/[\w/]*(?:\.py)?)")
DOTTED = re.compile(r"(?<![\w/.-])racecheck((?:\.[A-Za-z_]\w*)+)")
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _module_file(name: str) -> Path | None:
    """The source file of ``racecheck.a.b`` (a module or a package's __init__), or None."""
    parts = name.split(".")
    package, rest = "racecheck", parts[1:]
    if rest and rest[0] in ("fixed_impl", "scenarios"):
        package, rest = f"racecheck.{rest[0]}", rest[1:]
    base = {v: ROOT / k for k, v in architecture_rows.SOURCE_DIRS.items()}[package].joinpath(*rest)
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _names_defined(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    if "__getattr__" in names:  # names resolved lazily: accept the ones the module spells out
        names.update(n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str))
    return names


def _dotted_name_problem(name: str) -> str | None:
    parts = name.split(".")
    for i in range(2, len(parts) + 1):
        if _module_file(".".join(parts[:i])) is None:
            owner = _module_file(".".join(parts[: i - 1]))
            if owner is None or parts[i - 1] not in _names_defined(owner):
                return f"{'.'.join(parts[:i])} is neither a module nor a name defined in {_rel(owner)}"
            return None
    return None


def _prose(path: Path) -> str:
    """The text outside fenced code blocks (code is checked by running it, where it runs)."""
    return re.sub(r"^```.*?^```", "", path.read_text(), flags=re.S | re.M)


@pytest.mark.parametrize("doc", USER_DOCS, ids=_rel)
def test_the_docs_name_modules_that_exist(doc):
    text = doc.read_text()
    problems = [f"{p}: no such file or folder" for p in sorted(set(SOURCE_PATH.findall(text)))
                if not (ROOT / p).exists()]
    problems += [problem for suffix in sorted(set(DOTTED.findall(text)))
                 if (problem := _dotted_name_problem("racecheck" + suffix))]
    assert not problems, f"{_rel(doc)} names what the tree does not have:\n" + "\n".join(problems)


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation other than - and _ dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    for line in _prose(path).splitlines():
        match = re.match(r"^#{1,6}\s+(.*)$", line)
        if match:
            slug = _slug(match.group(1))
            count = seen.get(slug, 0)
            seen[slug] = count + 1
            if count:
                seen[f"{slug}-{count}"] = 1
    return set(seen)


@pytest.mark.parametrize("doc", LINKED_DOCS, ids=_rel)
def test_relative_links_and_anchors_resolve(doc):
    broken = []
    for target in LINK.findall(_prose(doc)):
        if re.match(r"^[a-z]+://", target) or target.startswith("mailto:"):
            continue
        file_part, _, anchor = target.partition("#")
        dest = (doc.parent / file_part).resolve() if file_part else doc
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            broken.append(f"{target}: no heading with that anchor in {_rel(dest)}")
    assert not broken, f"{_rel(doc)}:\n" + "\n".join(broken)


# --- the README and the tone of the docs ------------------------------------------------------------------------


def test_the_readme_stays_a_newcomers_page():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines: move detail into a docs/ page"
    assert any("docs/architecture.md" in line for line in lines), "the README links to the module map"


STORY = re.compile(r"\b(?:this session|we tried|(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|"
                   r"tenth|next|last|previous) (?:performance )?pass(?:es)?\b(?! over| through))", re.I)


@pytest.mark.parametrize("doc", USER_DOCS, ids=_rel)
def test_user_docs_say_how_things_are_not_how_they_got_there(doc):
    found = [f"{_rel(doc)}:{n}: {line.strip()}" for n, line in enumerate(doc.read_text().splitlines(), 1)
             if STORY.search(line)]
    assert not found, "history belongs in CHANGELOG.md:\n" + "\n".join(found)
