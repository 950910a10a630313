"""Static checks on candidate sources: forbidden APIs, reported with the offending line.

Resolves import aliases (``import torch.nn.functional as F`` then ``F.softmax``) so the
usual ways of calling a forbidden function are caught without running anything.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Finding:
    """One static finding: which detector, and where."""

    flag: str
    path: str
    line: int
    detail: str

    def evidence(self) -> str:
        """``path:line: detail``, the form stored in events."""
        return f"{self.path}:{self.line}: {self.detail}"


def _aliases(tree: ast.AST) -> dict[str, str]:
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                names[a.asname or a.name.split(".")[0]] = (
                    a.name if a.asname else a.name.split(".")[0]
                )
        elif isinstance(node, ast.ImportFrom) and node.module:
            for a in node.names:
                names[a.asname or a.name] = f"{node.module}.{a.name}"
    return names


def _dotted(node: ast.AST) -> str | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def forbidden_uses(path: str, source: str, forbidden: Iterable[str]) -> list[Finding]:
    """Uses of any forbidden dotted name in ``source`` (after alias resolution).

    A method form is caught too: ``torch.Tensor.softmax`` forbids ``x.softmax(...)``.
    """
    banned = set(forbidden)
    if not banned:
        return []
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []  # the compile stage reports syntax errors
    aliases = _aliases(tree)
    methods = {b.rsplit(".", 1)[1] for b in banned if b.startswith("torch.Tensor.")}
    found: list[Finding] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute | ast.Name):
            continue
        dotted = _dotted(node)
        if dotted is None:
            continue
        head, _, rest = dotted.partition(".")
        full = aliases.get(head, head) + (f".{rest}" if rest else "")
        if full in banned:
            found.append(Finding("forbidden_api", path, getattr(node, "lineno", 0), f"uses {full}"))
        elif isinstance(node, ast.Attribute) and node.attr in methods and head not in aliases:
            found.append(
                Finding("forbidden_api", path, node.lineno, f"calls .{node.attr}() (forbidden)")
            )
    unique = {(f.path, f.line, f.detail): f for f in found}
    return list(unique.values())
