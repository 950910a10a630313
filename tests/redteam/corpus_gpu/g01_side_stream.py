# ruff: noqa
# mypy: ignore-errors
"""Pattern 1: the work runs on a side stream the timed events do not cover."""
import torch

_side = None


def scale(x):
    global _side
    if _side is None:
        _side = torch.cuda.Stream()
    y = torch.empty_like(x)
    _side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(_side):
        for _ in range(50):  # long enough to dwarf the (empty) timed window
            torch.mul(x, 2, out=y)
            y.add_(1)
    return y
