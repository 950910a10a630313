# ruff: noqa
# mypy: ignore-errors
"""A forbidden operator (``torch.mul``) called through ``operator.methodcaller``.

The name never appears as an attribute: the method name is assembled at run time and
called through the standard library, then the product is moved by a plain copy.
"""
import operator

import torch


def scale(x):
    times = operator.methodcaller("".join(["m", "u", "l"]), 2.0)
    out = torch.empty_like(x)
    out.copy_(times(x))
    return out.add_(1.0)
