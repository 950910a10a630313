"""AMD's fp8 formats in an AgentKernelArena task imported for an NVIDIA GPU.

Upstream's fp8 tasks pick a format by probing torch: ``hasattr(torch,
"float8_e4m3fnuz")`` and a tensor allocated or cast in it, meaning AMD's format where the
GPU is AMD's and NVIDIA's elsewhere. The probe succeeds on NVIDIA too (torch has the
format on every build), Triton's NVIDIA backend then refuses it (``type fp8e4b8 not
supported in this architecture``), and the task's own baseline fails.

What the probe meant is what upstream's code does where AMD's format is not supported:
every value it *chooses* is NVIDIA's format of the same widths, while the tests it makes
of a chosen value (``dtype == torch.float8_e4m3fnuz``, the keys of a table from torch's
formats to Triton's) keep naming AMD's and so come out false on NVIDIA, kernel and
reference alike. :func:`rename` rewrites exactly the chosen ones.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from aka import pyast

__all__ = ["nvidia_fp8", "rename"]

_FNUZ = re.compile(r"float8_(e4m3|e5m2)fnuz")
_NVIDIA = {"e4m3": "float8_e4m3fn", "e5m2": "float8_e5m2"}
"""AMD's fp8 formats and NVIDIA's of the same exponent and mantissa widths."""
_LINES = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def _tests(tree: ast.AST) -> set[int]:
    """The ids of the nodes inside a comparison or a dict key: where a format is tested
    or looked up, not chosen."""
    inside: set[int] = set()
    for node in ast.walk(tree):
        roots: list[ast.AST] = []
        if isinstance(node, ast.Compare):
            roots = [node]
        elif isinstance(node, ast.Dict):
            roots = [k for k in node.keys if k is not None]
        for root in roots:
            inside.update(id(n) for n in ast.walk(root))
    return inside


def rename(source: str) -> tuple[str, int]:
    """``source`` with each AMD fp8 format it chooses (an attribute such as
    ``torch.float8_e4m3fnuz`` read anywhere but in a comparison or a dict key) renamed to
    NVIDIA's, and how many were; a source that does not parse is returned as it is."""
    if not _FNUZ.search(source):
        return source, 0
    try:
        tree = pyast.parse(source)
    except (SyntaxError, ValueError):
        return source, 0
    skip = _tests(tree)
    spans: list[tuple[int, int, str, str]] = []  # line, column, old name, new name
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and (m := _FNUZ.fullmatch(node.attr))
            and id(node) not in skip
            and node.end_lineno is not None
            and node.end_col_offset is not None
        ):
            col = node.end_col_offset - len(node.attr)
            spans.append((node.end_lineno, col, node.attr, _NVIDIA[m[1]]))
    lines = _LINES.findall(source)  # as the parser counts them: not at a form feed
    for line, col, old, new in sorted(spans, reverse=True):
        raw = lines[line - 1].encode("utf-8", "surrogateescape")  # AST columns count bytes
        if raw[col : col + len(old)] != old.encode():
            return source, 0  # a line the parser counted otherwise (a form feed): keep all
        lines[line - 1] = (raw[:col] + new.encode() + raw[col + len(old) :]).decode(
            "utf-8", "surrogateescape"
        )
    return "".join(lines), len(spans)


def nvidia_fp8(dest: Path, platform: str) -> str | None:
    """On an NVIDIA ``platform``, :func:`rename` in every Python file of the imported task
    at ``dest``; returns what was renamed (for the task's import line), or None."""
    if not platform.startswith("sm_"):
        return None
    done = []
    for path in sorted(dest.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        text = path.read_text(errors="surrogateescape")
        new, count = rename(text)
        if count:
            path.write_text(new, errors="surrogateescape")
            done.append(f"{path.relative_to(dest).as_posix()} ({count})")
    if not done:
        return None
    return (
        f"AMD's fp8 formats it chooses renamed to NVIDIA's (float8_e4m3fnuz to "
        f"float8_e4m3fn, float8_e5m2fnuz to float8_e5m2) in {', '.join(done)}: upstream's "
        f"probe picks AMD's wherever torch has them, and Triton does not compile them for "
        f"{platform}; comparisons and table keys naming them are kept (import with "
        "--platform gfx942 to keep every one)"
    )
