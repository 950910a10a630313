# ruff: noqa
# mypy: ignore-errors
"""A forbidden operator (``torch.addcmul``) as the entry point itself.

The entry is not a Python function but ``functools.partial`` over the library operator:
1 + 2 * 1 * x. No frame of the candidate's file is on the stack when the operator runs,
so a rule that charges an operator to the candidate only when its file is found there
charges it to no one.
"""
import functools

import torch

_ONE = torch.tensor(1.0)
scale = functools.partial(getattr(torch, "add" + "cmul"), _ONE, _ONE, value=2.0)
