"""The correctness rule shared by the evaluator's checker and the task validator.

An output passes when every element is within ``atol + rms_atol * rms + rtol * |ref|``
of the reference, where ``rms`` is the root mean square of the whole reference output of
that case. Kept free of module-level imports so that the checker process, which must
load little, the task validator and the importer's probe apply the same arithmetic.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

REPEAT_RTOL = 1e-9
"""How far two calls of a float64 reference may differ and still be the same answer."""


def effective_atol(tol: Mapping[str, float], rms: float) -> float:
    """``atol + rms_atol * rms``: the absolute part of the tolerance for one case."""
    return float(tol["atol"]) + float(tol.get("rms_atol", 0.0)) * rms


def rms(t: Any) -> float:
    """The root mean square of tensor ``t``, in float64 (0 when empty), integer tensors
    (indices, codes) included: a norm, so no squared copy of a large output is made."""
    if not t.numel():
        return 0.0
    return float(t.double().norm()) / t.numel() ** 0.5


def repeats(a: Any, b: Any) -> bool:
    """Whether two reference outputs are the same answer: equal, or for floating outputs
    within :data:`REPEAT_RTOL` of the output's RMS everywhere, NaN where NaN was; tuples
    and lists element by element. On a GPU, float64 kernels that accumulate with atomics
    (cuDNN's transposed convolutions) differ in the last bits from call to call; unseeded
    randomness, which this guards against, differs by the output's own scale."""
    import torch

    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(repeats(x, y) for x, y in zip(a, b, strict=True))
    if type(a) is not torch.Tensor or type(b) is not torch.Tensor or a.shape != b.shape:
        return bool(type(a) is type(b) and (a is b or a == b))
    if torch.equal(a, b):
        return True
    if not (a.is_floating_point() and b.is_floating_point()) or not a.numel():
        return False
    x, y = a.detach().double(), b.detach().to(device=a.device, dtype=torch.float64)
    scale = rms(x.nan_to_num(nan=0.0, posinf=0.0, neginf=0.0))
    same = (x == y) | (x.isnan() & y.isnan()) | ((x - y).abs() <= REPEAT_RTOL * scale)
    return bool(same.all())
