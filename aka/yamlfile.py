"""Reading the YAML files users write (run configs, task specs, imported task folders).

One place decides what a missing file, bad syntax or a top level that is not a mapping
says, so every such error names the file and the fix the same way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from aka.errors import InputError


def read_yaml(path: Path, *, missing: str, missing_where: Path, missing_fix: str) -> Any:
    """The parsed document; :class:`InputError` for a missing file or malformed YAML."""
    if not path.is_file():
        raise InputError(missing, where=str(missing_where), fix=missing_fix)
    try:
        return yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise InputError(
            f"malformed YAML: {exc}", where=str(path), fix="fix the YAML syntax"
        ) from None


def read_yaml_mapping(
    path: Path, *, missing: str, missing_where: Path, missing_fix: str, docs: str
) -> dict[str, Any]:
    """As :func:`read_yaml`, and the top level must be a mapping (``docs`` says of what)."""
    raw = read_yaml(path, missing=missing, missing_where=missing_where, missing_fix=missing_fix)
    if not isinstance(raw, dict):
        raise InputError("expected a mapping at the top level", where=str(path), fix=f"see {docs}")
    return raw
