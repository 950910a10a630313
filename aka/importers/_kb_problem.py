"""The reader of a KernelBench problem file: its text, its starting code, its torch calls.

Read statically, nothing run: the file decoded as Python decodes it (:func:`decode`),
the body the candidate's ``model_new.py`` starts from (Model renamed ``ModelNew``, the
values only the input functions read left out), and the torch functions the forwards
call, which the task forbids. Running the problem is the probe's
(:mod:`aka.importers._kb_probe`).
"""

from __future__ import annotations

import ast
import codecs
import io
import re
import tokenize
from dataclasses import dataclass
from pathlib import Path

from aka.errors import InputError
from aka.pyast import dotted_name, import_aliases, resolve

ALLOCATORS = {
    "empty", "empty_like", "zeros", "zeros_like", "ones", "ones_like", "full", "full_like",
    "arange", "tensor", "as_tensor", "Size", "device", "no_grad", "float32", "float16",
    "bfloat16", "float64", "int64", "int32", "bool", "finfo", "iinfo",
}  # fmt: skip
"""torch functions that allocate or describe rather than compute: never forbidden."""


@dataclass(frozen=True)
class Problem:
    """What the importer read from one problem file."""

    path: Path
    source: str
    """The file's text, decoded as Python decodes it (:func:`decode`)."""
    raw: bytes
    """The file's bytes, which the task's ``problem.py`` keeps (a declared encoding then
    still matches what it declares), less a UTF-8 BOM: Python skips it, and readers that
    take the file as UTF-8 text saw a stray U+FEFF."""
    body: str
    """The file without its imports, get_inputs, get_init_inputs and __main__ block."""
    forward_calls: list[str]
    """The torch functions the forwards of the file's classes call."""
    imports: list[str]


def _forward_calls(classes: list[ast.ClassDef], aliases: dict[str, str]) -> list[str]:
    """Dotted torch functions called in the ``forward`` of ``classes`` (aliases resolved):
    Model's, and those of the modules of the file it is built from (level 3's
    ``CausalSelfAttention`` holds the softmax its Model computes)."""
    found: set[str] = set()
    for fn in (f for cls in classes for f in cls.body):
        if isinstance(fn, ast.FunctionDef) and fn.name == "forward":
            for node in ast.walk(fn):
                if isinstance(node, ast.Call) and (name := dotted_name(node.func)):
                    full = resolve(name, aliases)
                    if full.startswith("torch.") and full.rsplit(".", 1)[1] not in ALLOCATORS:
                        found.add(full)
    return sorted(found)


def decode(raw: bytes, path: Path) -> str:
    """The file's text as Python reads it: UTF-8, a UTF-8 BOM, or the encoding its first
    lines declare (``# -*- coding: latin-1 -*-``), which the task's loader honours too.

    Raises:
        InputError: bytes Python would refuse (a Latin-1 comment with no declaration).
    """
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
        return raw.decode(encoding)
    except (SyntaxError, UnicodeDecodeError, LookupError) as exc:
        reason = exc.msg if isinstance(exc, SyntaxError) else str(exc)
        raise InputError(
            f"not UTF-8 and no other encoding declared, so Python cannot run it ({reason})",
            where=str(path),
            fix="save the file as UTF-8, or declare its encoding on its first line "
            "(# -*- coding: latin-1 -*-)",
        ) from None


def read_problem(path: Path) -> Problem:
    """Parse a problem file.

    Raises:
        InputError: unreadable, not Python, or missing ``class Model``, ``get_inputs``
            or ``get_init_inputs``; the message names the file, the field and the fix.
    """
    try:
        raw = path.read_bytes().removeprefix(codecs.BOM_UTF8)
        source = decode(raw, path)
        tree = ast.parse(source, filename=str(path))
    except OSError as exc:
        raise InputError(
            f"cannot read: {exc}", where=str(path), fix="pass a readable file"
        ) from None
    except SyntaxError as exc:
        raise InputError(
            f"not valid Python: {exc.msg}", where=f"{path}:{exc.lineno}", fix="fix the syntax"
        ) from None
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    funcs = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    if "Model" not in classes:
        hint = " (this looks like a solution: it defines ModelNew)" if "ModelNew" in classes else ""
        raise InputError(
            f"field 'class Model': not defined{hint}",
            where=str(path),
            fix="a KernelBench problem defines `class Model(nn.Module)` with a forward()",
        )
    for name, what in [
        ("get_inputs", "the forward inputs"),
        ("get_init_inputs", "Model's constructor arguments"),
    ]:
        if name not in funcs:
            raise InputError(
                f"field '{name}': function not defined",
                where=str(path),
                fix=f"define {name}() returning a list of {what} (KernelBench format)",
            )
    imports = [
        ast.get_source_segment(source, n) or ""
        for n in tree.body
        if isinstance(n, ast.Import | ast.ImportFrom)
    ]
    return Problem(
        path=path,
        source=source,
        raw=raw,
        body=_body(source, tree),
        forward_calls=_forward_calls(list(classes.values()), import_aliases(tree)),
        imports=imports,
    )


def _body(source: str, tree: ast.Module) -> str:
    """What ModelNew needs from the file (helpers, and the module-level values they read,
    directly or through other values), Model renamed.

    Values only get_inputs() and get_init_inputs() read are left out: the starting code is
    the candidate's, judged by the candidate's rules, and a size read from the
    environment there (``int(os.environ.get("BATCH", 16))``) failed the baseline.
    """
    nodes = [
        node for node in tree.body
        if not isinstance(node, ast.Import | ast.ImportFrom)
        and not (isinstance(node, ast.FunctionDef) and node.name in ("get_inputs", "get_init_inputs"))
        and not (isinstance(node, ast.If) and "__main__" in ast.dump(node.test))
    ]  # fmt: skip
    values = [n for n in nodes if isinstance(n, ast.Assign | ast.AnnAssign | ast.AugAssign)]
    used = {name for n in nodes if n not in values for name in _reads(n)}
    kept: list[ast.stmt] = []
    while grown := [n for n in values if n not in kept and _binds(n) & used]:
        kept += grown
        used |= {name for n in grown for name in _reads(n)}
    keep = [ast.get_source_segment(source, n, padded=True) or "" for n in nodes
            if n not in values or n in kept]  # fmt: skip
    return re.sub(r"\bModel\b", "ModelNew", "\n\n\n".join(keep))


def _reads(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _binds(node: ast.stmt) -> set[str]:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]  # type: ignore[attr-defined]
    return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
