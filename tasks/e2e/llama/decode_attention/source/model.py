"""The served model of this task: a Llama decode step whose attention is the kernel.

The attention over the KV cache is ``kernel.decode_attention``; the rest of the model
is PyTorch.

Not editable. ``kernel.py`` and ``llama.py`` are loaded from this file's own folder
under names unique to that folder, so a baseline and a candidate loaded into one
process each get their own kernel (a plain ``import kernel`` would hand the second
the first one's module from ``sys.modules``), and without writing ``__pycache__``
files: the evaluator's sandbox treats file writes from candidate code as suspect.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import torch


class _SourceOnly(importlib.machinery.SourceFileLoader):
    """A source loader that never writes bytecode caches."""

    def set_data(self, *args: object, **kwargs: object) -> None:
        return None


def _load(stem: str) -> ModuleType:
    path = Path(__file__).resolve().with_name(f"{stem}.py")
    tag = hashlib.blake2s(str(path).encode(), digest_size=6).hexdigest()
    name = f"_aka_e2e_{stem}_{tag}"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            name, path, loader=_SourceOnly(name, str(path))
        )
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot import {path}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


llama = _load("llama")
kernel = _load("kernel")
OPS = llama.Ops().with_kernels(decode_attention=kernel.decode_attention)


def decode(*inputs: torch.Tensor, **shape: int) -> torch.Tensor:
    """One decode step: logits (B, V) of the next token."""
    return llama.decode(OPS, *inputs, **shape)
