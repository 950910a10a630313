"""Reading the YAML files users write (run configs, task specs, imported task folders).

One place decides what a missing file, bad syntax, a duplicate key or a top level that
is not a mapping says, so every such error names the file and the fix the same way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from aka.errors import InputError


class _UniqueKeyLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses a key written twice in one mapping.

    PyYAML keeps the last value silently, so a config with two ``timing:`` blocks would
    run with one of them and nobody would know which. Keys that a merge (``<<``) brings
    in may still be overridden, as YAML intends.
    """


def _unique_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode, deep: bool = False) -> Any:
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue
        key = loader.construct_object(key_node, deep=True)
        try:
            first = seen.get(key)
        except TypeError:  # an unhashable key: the constructor below reports it
            continue
        if first is not None:
            raise yaml.constructor.ConstructorError(
                None,
                None,
                f"duplicate key {key!r} (first on line {first + 1})",
                key_node.start_mark,
            )
        seen[key] = key_node.start_mark.line
    return loader.construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _unique_mapping)


def read_yaml(path: Path, *, missing: str, missing_where: Path, missing_fix: str) -> Any:
    """The parsed document; :class:`InputError` for a missing file, malformed YAML or a
    key written twice in one mapping."""
    if not path.is_file():
        raise InputError(missing, where=str(missing_where), fix=missing_fix)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read it: {exc.strerror or exc}", where=str(path),
                         fix="make the file readable by this user") from None  # fmt: skip
    try:
        # bytes, not text: PyYAML reads the encoding from a byte-order mark (a UTF-8 one
        # from Windows editors, UTF-16) and names the offending byte of anything else
        return yaml.load(data, Loader=_UniqueKeyLoader)  # a SafeLoader
    except yaml.reader.ReaderError as exc:
        raise InputError(f"{path.name} is not UTF-8 text ({exc.reason} at byte {exc.position})",
                         where=str(path), fix="save the file as UTF-8") from None  # fmt: skip
    except yaml.YAMLError as exc:
        fix = (
            "write each key once per mapping"
            if "duplicate key" in str(exc)
            else "fix the YAML syntax"
        )
        raise InputError(f"malformed YAML: {exc}", where=str(path), fix=fix) from None


def read_yaml_mapping(
    path: Path, *, missing: str, missing_where: Path, missing_fix: str, docs: str
) -> dict[str, Any]:
    """As :func:`read_yaml`, and the top level must be a mapping (``docs`` says of what)."""
    raw = read_yaml(path, missing=missing, missing_where=missing_where, missing_fix=missing_fix)
    if not isinstance(raw, dict):
        raise InputError("expected a mapping at the top level", where=str(path), fix=f"see {docs}")
    return raw
