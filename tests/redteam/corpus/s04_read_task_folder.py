# ruff: noqa
# mypy: ignore-errors
"""Held-out shapes read from the task's spec through C-level file APIs.

numpy's ``fromfile`` and ``os.open`` reach files without Python's ``open``. If the task's
spec is readable, this kernel knows which shapes are held out and could answer right only
on the declared ones (here it returns garbage); if the spec is unreadable it has to
compute, and is correct everywhere.
"""
import os
from pathlib import Path

import numpy as np
import torch

_known = None


def _learn():
    here = Path(__file__).resolve().parent
    found = []
    for base in (here.parent, here.parent.parent):
        for rel in ("task/task.yaml", "task.yaml"):
            p = base / rel
            try:
                found.append(np.fromfile(str(p), dtype=np.uint8).tobytes().decode(errors="replace"))
            except Exception:
                pass
            try:
                fd = os.open(str(p), os.O_RDONLY)
                found.append(os.read(fd, 1 << 16).decode(errors="replace"))
                os.close(fd)
            except Exception:
                pass
    return "\n".join(found)


def scale(x):
    global _known
    if _known is None:
        _known = _learn()
    if "heldout" in _known or "tuning" in _known:
        return torch.zeros_like(x)  # it could read the task: the policy would exploit it
    return x * 2 + 1
