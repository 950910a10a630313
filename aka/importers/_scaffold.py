"""``aka tasks new``: a task folder from a template, valid as written.

Every template is the same small op (out = x * sigmoid(x) * scale, row-wise) in the
starting form its type calls for: a Triton kernel (triton2triton), PyTorch code to
replace (torch2triton, torch2cuda), PyTorch code with a hidden reference
(instruction2triton), or a CUDA kernel built with torch's extension loader (cuda2cuda).
Triton and PyTorch templates run on the CPU too, so ``aka tasks validate --device cpu``
passes on them out of the box; CUDA templates need a GPU.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aka.backends import BACKENDS
from aka.errors import InputError
from aka.importers._common import prepare, slug, write_spec
from aka.importers._templates import (
    SCAFFOLD_CU,
    SCAFFOLD_CUDA_BODY_CUDA,
    SCAFFOLD_CUDA_BODY_TORCH,
    SCAFFOLD_CUDA_PY,
    SCAFFOLD_REFERENCE,
    SCAFFOLD_TORCH,
    SCAFFOLD_TRITON,
)

TASK_TYPES = ("triton2triton", "torch2triton", "instruction2triton", "cuda2cuda", "torch2cuda")
FORBIDDEN = [
    "torch.sigmoid",
    "torch.Tensor.sigmoid",
    "torch.nn.functional.silu",
    "torch.special.expit",
]
INSTRUCTIONS = (
    "Implement `silu_scale(x, scale)` in kernel.py as a {what}. Input: `x` of shape (M, N) "
    "and `scale` of shape (N,), same dtype; neither may be modified. Output: a new tensor of "
    "x's shape and dtype with out[i, j] = x[i, j] * sigmoid(x[i, j]) * scale[j], computed in "
    "fp32. The torch ops listed as forbidden may not be called."
)


def _files(kind: str, name: str) -> tuple[dict[str, str], dict[str, Any]]:
    """Source files and spec fields for one task type."""
    if kind == "triton2triton":
        return {"kernel.py": SCAFFOLD_TRITON.format(name=name)}, {
            "targets": ["silu_scale_kernel"], "tunables": {"BLOCK": [256, 512, 1024]},
        }  # fmt: skip
    if kind in ("torch2triton", "instruction2triton"):
        extra: dict[str, Any] = {"targets": ["silu_scale"]}
        if kind == "instruction2triton":
            extra["reference_visible"] = False
        return {"kernel.py": SCAFFOLD_TORCH.format(name=name, backend="Triton")}, extra
    body = SCAFFOLD_CUDA_BODY_CUDA if kind == "cuda2cuda" else SCAFFOLD_CUDA_BODY_TORCH
    files = {
        "kernel.py": SCAFFOLD_CUDA_PY.format(name=name, body=body),
        "kernel.cu": SCAFFOLD_CU.format(name=name),
    }
    return files, {"targets": ["silu_scale_kernel"], "tunables": {"THREADS": [128, 256, 512]}}


def scaffold_task(
    name: str, kind: str, root: Path, *, suite: str = "new", force: bool = False
) -> Path:
    """Write ``root/kind/suite/name`` from the template for ``kind``; returns the folder.

    Raises:
        InputError: unknown type, a name that is not a slug, or an existing folder.
    """
    if kind not in TASK_TYPES:
        raise InputError(
            f"unknown task type {kind!r}", where="--type", fix=f"use one of {', '.join(TASK_TYPES)}"
        )
    if slug(name) != name:
        raise InputError(
            f"task name {name!r} is not a slug", where="NAME", fix=f"use {slug(name)!r}"
        )
    dest = root / kind / suite / name
    prepare(dest, force=force)
    files, extra = _files(kind, name)
    (dest / "source").mkdir(exist_ok=True)
    for rel, text in files.items():
        (dest / "source" / rel).write_text(text)
    (dest / "reference.py").write_text(SCAFFOLD_REFERENCE.format(name=name))
    cuda = kind.endswith("cuda")
    backend = "cuda" if cuda else "triton"
    what = "CUDA kernel in kernel.cu" if cuda else "Triton kernel"
    spec: dict[str, Any] = {
        "name": name,
        "type": kind,
        "origin": "scaffolded by `aka tasks new`: SiLU times a per-column scale",
        "instructions": INSTRUCTIONS.format(what=what),
        "backend": backend,
        "editable": list(files),
        "entry": "kernel.py:silu_scale",
        **extra,
        "dtypes": ["float32"] if cuda else ["float32", "float16"],
        "tolerances": {
            "float32": {"atol": 1.0e-5, "rtol": 1.0e-5},
            **({} if cuda else {"float16": {"atol": 2.0e-3, "rtol": 2.0e-3}}),
        },
        "shapes": {
            "tuning": [{"M": 4096, "N": 4096}, {"M": 16384, "N": 1024}],
            "heldout": [{"M": 4099, "N": 3001}, {"M": 1, "N": 65537}],
            **({} if cuda else {"cpu": [{"M": 4, "N": 64}, {"M": 3, "N": 100}]}),
            **({} if cuda else {"cpu_heldout": [{"M": 5, "N": 37}, {"M": 1, "N": 129}]}),
        },
        "seeds": 3,
        "devices": list(BACKENDS[backend].devices),
        "forbidden": FORBIDDEN,
        "requires": list(BACKENDS[backend].requires),
    }
    write_spec(dest, spec)
    return dest
