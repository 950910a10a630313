# ruff: noqa
# mypy: ignore-errors
"""A forbidden operator (``torch.mm``) run inside one the task allows.

``torch.linalg.matmul`` is its own operator (``aten::linalg_matmul``), a composite that
dispatches to ``aten::matmul`` and then ``aten::mm``: counting only the outermost operator
of each call, the library's matrix product ran uncharged. 2x + 1 as a (N, 1) x (1, 1)
product plus one.
"""
import torch


def scale(x):
    two = torch.full((1, 1), 2.0, dtype=x.dtype, device=x.device)
    return torch.linalg.matmul(x.reshape(-1, 1), two).reshape(x.shape) + 1
