# ruff: noqa
# mypy: ignore-errors
"""A forbidden operator (``torch.mul``) from code whose code object names another file.

Operators are attributed to the candidate by the file of the Python code that called
them. This kernel re-labels its own function as generated code (``<frozen ...>``), which a
walk over the stack skips like library code, so the walk ends in the evaluator's frames
and the library call is charged to no one.
"""
import operator

import torch


def _impl(x):
    times = operator.methodcaller("".join(["m", "u", "l"]), 2.0)
    return times(x).add_(1.0)


def _relabel(fn):
    code = getattr(fn, "__co" + "de__")
    setattr(fn, "__co" + "de__", code.replace(co_filename="<frozen kernels>"))
    return fn


scale = _relabel(_impl)
