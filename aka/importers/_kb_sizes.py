"""Which of a KernelBench problem's sizes scale, and the shapes tried when they do.

Pure functions over names and numbers: no torch, and no problem code runs here.
:func:`roots` and :func:`size_values` find the module-level sizes,
:func:`window_hyperparameter` keeps those that size a window or pick an axis as
written, and :func:`shrink` and the candidate lists propose shapes, which the probe
(:mod:`aka.importers._kb_probe`) builds on meta to accept or pass over.
"""

from __future__ import annotations

import ast
import re
from typing import Any

MIN_SIZE = 8
"""Sizes below this are kept as written (reduction dims, tiny batches, small windows)."""
NEVER_SCALE = frozenset({
    "kernel", "kernels", "ksize", "pad", "pads", "padding", "paddings", "stride", "strides",
    "dilation", "dilations", "dilate", "group", "groups", "pool", "pooling", "window",
    "windows", "scale", "scales", "scaling", "factor", "factors", "axis", "axes", "eps",
    "epsilon",
})  # fmt: skip
"""Words of names that size a window or pick an axis: scaling them changes the problem
(:func:`window_hyperparameter`)."""
NAME_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
"""The words of a name: split at ``_``, at capitals and at digits (``kernelSize``,
``dim1``)."""


def window_hyperparameter(name: str) -> bool:
    """Whether the size ``name`` (``layer_sizes[1]`` is ``layer_sizes``) is a window
    hyperparameter or an axis: one of its words is in :data:`NEVER_SCALE`, or ends in
    ``pool`` or ``kernel`` (``maxpool_size``). Whole words, not letters: ``timesteps``
    holds ``eps`` and ``padded_features`` holds ``pad``, and both are real sizes."""
    words = [w.lower() for w in NAME_WORDS.findall(name.partition("[")[0])]
    return any(w in NEVER_SCALE or w.endswith(("pool", "kernel")) for w in words)


Shape = dict[str, int]


def roots(source: str | bytes) -> set[str]:
    """Names assigned at module level from constants alone (no other module-level name).

    ``source`` as bytes is decoded as Python decodes a file (a BOM, a declared encoding)."""
    bound: set[str] = set()
    found: set[str] = set()
    for stmt in ast.parse(source).body:
        if isinstance(stmt, ast.Assign | ast.AnnAssign) and stmt.value is not None:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            names = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
            used = {n.id for n in ast.walk(stmt.value) if isinstance(n, ast.Name)}
            (found.update if not used & bound else found.difference_update)(names)
            bound |= names
        elif isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
            found.discard(stmt.target.id)
    return found


def size_values(module: Any, names: set[str]) -> Shape:
    """``name`` for an int, ``name[i]`` for each int of a list or tuple of ints."""
    out: Shape = {}
    for name in sorted(names):
        value = vars(module).get(name)
        if type(value) is int:
            out[name] = value
        elif isinstance(value, list | tuple) and value and all(type(v) is int for v in value):
            out.update({f"{name}[{i}]": v for i, v in enumerate(value)})
    return out


def heldout_candidates(tuning: Shape) -> list[Shape]:
    """About 1/8 larger: odd sizes first, then multiples of 8, then the first size alone."""
    first = next(iter(tuning))
    return [
        {k: (v + max(1, v // 8)) | 1 for k, v in tuning.items()},
        {k: (v + v // 8 + 7) // 8 * 8 for k, v in tuning.items()},
        {k: (v + max(1, v // 8)) | 1 if k == first else v for k, v in tuning.items()},
        {k: v + 8 if k == first else v for k, v in tuning.items()},
    ]


def shrink(tuning: Shape, fits: Any) -> Shape | None:
    """A CPU shape: the largest size halved, or every size when halving it alone breaks
    the problem (sizes tied to each other), until ``fits`` accepts the shape. ``fits``
    returns True (small enough), False (too big) or None (the problem breaks). None when
    no shape fits.
    """
    shape, frozen = dict(tuning), set()
    for _ in range(128):
        if fits(shape):
            return shape
        free = [k for k in shape if k not in frozen and shape[k] > 4]
        if not free:
            return None
        k = max(free, key=lambda n: shape[n])
        steps = [{**shape, k: max(4, shape[k] // 2)}, {n: max(4, v // 2) for n, v in shape.items()}]
        shape_next = next((s for s in steps if fits(s) is not None), None)
        if shape_next is None:
            frozen.add(k)
        else:
            shape = shape_next
    return None


def cpu_heldout_candidates(cpu: Shape) -> list[Shape]:
    """Near the CPU shape and unseen: +1 (odd), +2, then the first size alone."""
    first = next(iter(cpu))
    return [
        {k: v + 1 if v >= 4 else v for k, v in cpu.items()},
        {k: v + 2 if v >= 4 else v for k, v in cpu.items()},
        {k: v + 1 if k == first else v for k, v in cpu.items()},
    ]
