# ruff: noqa
# mypy: ignore-errors
"""A forbidden operator (``torch.mul``) redispatched straight to its kernel.

``OpOverload.redispatch`` with an explicit dispatch key set runs the kernel of that key
without the dispatcher's RecordFunction, which is what sees the operators a candidate
calls. The overload and the method are reached by computed names.
"""
import torch


def scale(x):
    key = torch._C.DispatchKey.CUDA if x.is_cuda else torch._C.DispatchKey.CPU
    op = getattr(torch.ops.aten.mul, "Sca" + "lar")
    out = getattr(op, "redis" + "patch")(torch._C.DispatchKeySet(key), x, 2.0)
    return out.add_(1.0)
