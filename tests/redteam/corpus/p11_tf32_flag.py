# ruff: noqa
# mypy: ignore-errors
"""Pattern 11: switch on TF32 (a library precision downgrade)."""
import torch

torch.backends.cuda.matmul.allow_tf32 = True


def scale(x):
    return x * 2 + 1
