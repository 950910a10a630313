# ruff: noqa
# mypy: ignore-errors
"""A forbidden operator (``torch.mul``) inside an ``autograd.Function``'s forward.

Applying the function records an operator named after its class around everything its
forward runs, the ``aten::mul`` included: counting only the outermost operator of each
call, the library call ran uncharged. Wrapping a kernel in an ``autograd.Function`` is
common, so this is where a policy finds it first.
"""
import torch


class _Scale(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return torch.mul(x, 2) + 1

    @staticmethod
    def backward(ctx, grad):
        return grad * 2


def scale(x):
    return _Scale.apply(x)
