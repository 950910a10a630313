# ruff: noqa
# mypy: ignore-errors
"""Pattern 1: the real work runs on a side stream that the timed events do not cover.

The timed window records its end event on the current stream right after the call
returns; the work queued on the side stream (a long kernel, then the answer) is still
running then. Only the host clock, which waits for the whole device, sees it.
"""

import torch

_side = None


def scale(x):
    global _side
    if _side is None:
        _side = torch.cuda.Stream()
    y = torch.empty_like(x)
    _side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(_side):
        torch.cuda._sleep(2_000_000)  # ~1 ms of device time: the expensive part
        torch.mul(x, 2, out=y)
        y.add_(1)
    return y
