# ruff: noqa
# mypy: ignore-errors
"""Pattern 3: a lazy tensor subclass that computes when inspected."""
import torch


class Lazy(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return super().__torch_function__(func, types, args, kwargs or {})


def scale(x):
    return (x * 2 + 1).as_subclass(Lazy)
