"""Names in Python source: import aliases and dotted references, resolved.

The static hack checks (:mod:`aka.eval._static`) and the KernelBench importer both ask
what a dotted name in a file really refers to (``F.softmax`` is
``torch.nn.functional.softmax`` after ``import torch.nn.functional as F``).
"""

from __future__ import annotations

import ast


def import_aliases(tree: ast.AST) -> dict[str, str]:
    """Local name -> what it imports, over every import statement in ``tree``."""
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                head = a.name.split(".")[0]
                names[a.asname or head] = a.name if a.asname else head
        elif isinstance(node, ast.ImportFrom) and node.module:
            for a in node.names:
                names[a.asname or a.name] = f"{node.module}.{a.name}"
    return names


def dotted_name(node: ast.AST) -> str | None:
    """``a.b.c`` for a chain of attributes on a name; None for anything else."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return ".".join([node.id, *reversed(parts)])
    return None


def resolve(dotted: str, aliases: dict[str, str]) -> str:
    """``dotted`` with its first part replaced by what that name was imported as."""
    head, _, rest = dotted.partition(".")
    return aliases.get(head, head) + (f".{rest}" if rest else "")
