"""The correctness rule shared by the evaluator's checker and the task validator.

An output passes when every element is within ``atol + rms_atol * rms + rtol * |ref|``
of the reference, where ``rms`` is the root mean square of the whole reference output of
that case. Kept free of imports so that the checker process, which must load little,
and the validator apply the same arithmetic.
"""

from __future__ import annotations

from collections.abc import Mapping


def effective_atol(tol: Mapping[str, float], rms: float) -> float:
    """``atol + rms_atol * rms``: the absolute part of the tolerance for one case."""
    return float(tol["atol"]) + float(tol.get("rms_atol", 0.0)) * rms
