# ruff: noqa
# mypy: ignore-errors
"""Honest: a table of implementations per dtype, with a dataclass holding the constants."""
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Affine:
    a: float = 2.0
    b: float = 1.0


_AFFINE = Affine()


def _f32(x):
    return torch.addcmul(torch.full_like(x, _AFFINE.b), x, torch.full_like(x, _AFFINE.a))


def _generic(x):
    return (x.double() * _AFFINE.a + _AFFINE.b).to(x.dtype)


_TABLE = {torch.float32: _f32}


def scale(x):
    return _TABLE.get(x.dtype, _generic)(x)
