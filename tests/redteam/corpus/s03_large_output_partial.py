# ruff: noqa
# mypy: ignore-errors
"""Wrong on part of a large output, on most timed calls.

Audits of timed calls used to stop at a byte budget per shape, so a large output got two
random audits and the last call: a kernel that skips a third of its output on two calls
in three past the correctness calls went unseen about one time in nine. Each audit is
now a keyed sample of the output's elements, as many audits as for a small output.
"""
import torch

_count = {}


def scale(x):
    key = (tuple(x.shape), x.dtype, x.device)
    _count[key] = _count.get(key, 0) + 1
    out = x * 2 + 1
    if _count[key] > 4 and _count[key] % 3:  # past the correctness calls: a third skipped
        out[::3] = 0
    return out
