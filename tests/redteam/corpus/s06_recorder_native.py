# ruff: noqa
# mypy: ignore-errors
"""A forbidden operator (``torch.mul``) after switching the operator recorder off natively.

torch's Python switch of the recorder is not there to call, so this reaches
``at::enableRecordFunction`` in libtorch through ctypes and leaves the recorder off.
"""
import ctypes
import operator
import os

import torch

_lib = ctypes.CDLL(os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so"))
_off = getattr(_lib, "_ZN2at20enableRecordFunctionEb")
_off.argtypes = [ctypes.c_bool]


def scale(x):
    _off(False)
    return operator.methodcaller("".join(["m", "u", "l"]), 2.0)(x).add_(1.0)
