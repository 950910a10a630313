# ruff: noqa
# mypy: ignore-errors
"""A forbidden operator (``torch.mul``) hidden in a TorchScript function built from text.

The scripted graph runs in TorchScript's interpreter, not in Python, and the text that
names the operator is decoded from bytes at import time.
"""
import torch

_src = bytes.fromhex("6465662066287829203a0a2020202072657475726e20746f7263682e6d756c28782c20322e3029")
_fn = torch.jit.CompilationUnit(_src.decode().replace(" :", ":") + "\n").f


def scale(x):
    return _fn(x) + 1.0
