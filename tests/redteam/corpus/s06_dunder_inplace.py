# ruff: noqa
# mypy: ignore-errors
"""A forbidden operator (``torch.mul``) reached as the in-place dunder of the class.

``Tensor.__imul__`` is looked up on the class under a computed name and
applied to a fresh copy, so the source spells neither ``mul`` nor ``*``.
"""
import torch


def scale(x):
    out = x.clone()
    getattr(type(out), "__i" + "mul__")(out, 2.0)
    return out.add_(1.0)
