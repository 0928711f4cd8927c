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


def test_the_distribution_is_pytest_racecheck_and_metadata_is_read_by_that_name():
    """``racecheck`` on the package index is another project: ours is pytest-racecheck, imported and run as
    racecheck. Every metadata lookup uses the distribution's name, so an installed wheel reports its version."""
    from racecheck.report.results import DISTRIBUTION, racecheck_version

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["name"] == DISTRIBUTION == "pytest-racecheck"
    assert project["scripts"] == {"racecheck": "racecheck.frontends.cli:main"}
    assert "racecheck" in project["entry-points"]["pytest11"]
    assert racecheck_version() == project["version"]  # the installed distribution is this one
    for path in (ROOT / "harness").rglob("*.py"):
        text = path.read_text()
        assert 'version("racecheck")' not in text and 'package_name="racecheck"' not in text, path
