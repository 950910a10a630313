"""Every package directory is listed in pyproject.toml (the import-name mapping needs it)."""

from __future__ import annotations

import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_every_package_is_listed() -> None:
    tool = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    mapping: dict[str, str] = tool["package-dir"]
    listed = set(tool["packages"])
    found = set()
    for name, folder in mapping.items():
        for init in sorted((REPO / folder).rglob("__init__.py")):
            rel = init.parent.relative_to(REPO / folder).parts
            found.add(".".join((name, *rel)))
    assert found == listed


def test_import_names_do_not_shadow_popular_packages() -> None:
    tool = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert not {"agents", "ledger", "runners"} & set(tool["package-dir"])
