"""Every package folder of the source tree ships: pyproject.toml lists the packages by hand (setuptools maps
harness/ to racecheck), so a new subpackage that is not listed works in an editable install and is missing from a
wheel. This compares the list with the folders that hold an __init__.py."""

from __future__ import annotations

from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # Python 3.11+; the check needs to run on one interpreter only

ROOT = Path(__file__).resolve().parents[2]


def _package_folders() -> set[str]:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    mapping = pyproject["tool"]["setuptools"]["package-dir"]
    found = set()
    for package, folder in mapping.items():
        base = ROOT / folder
        for init in base.rglob("__init__.py"):
            if "__pycache__" in init.parts:
                continue
            relative = init.parent.relative_to(base)
            found.add(".".join([package, *relative.parts]))
    return found


def test_every_package_folder_is_listed_in_pyproject():
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    folders = _package_folders()
    assert folders - listed == set(), f"add to [tool.setuptools] packages: {sorted(folders - listed)}"
    assert listed - folders == set(), f"listed but not in the tree: {sorted(listed - folders)}"
