"""Python source as trees: parsing from several threads, import aliases, dotted names.

The static hack checks (:mod:`aka.eval._static`) and the KernelBench importer both ask
what a dotted name in a file really refers to (``F.softmax`` is
``torch.nn.functional.softmax`` after ``import torch.nn.functional as F``).

:func:`parse` is :func:`ast.parse` behind one lock. CPython 3.11 keeps the AST
constructor's recursion depth in per-interpreter state, so when a thread building a tree
is switched out (a garbage collection running finalizers mid-construction) and another
thread builds one, the first can fail with ``SystemError: AST constructor recursion depth
mismatch`` (CPython issue gh-106905). The evaluator runs several evaluations at once on
threads, each scanning its candidate's sources, so without the lock one candidate of a
batch could fail for another's timing. Parsing is fast next to an evaluation; the lock
is re-entrant for a finalizer that parses.
"""

from __future__ import annotations

import ast
import threading

_PARSE = threading.RLock()


def parse(source: str | bytes, filename: str = "<unknown>") -> ast.Module:
    """:func:`ast.parse` of ``source``, one thread at a time (see the module doc)."""
    with _PARSE:
        return ast.parse(source, filename=filename)


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
