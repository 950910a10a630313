"""A candidate that, after seeing a held-out input, opens a path naming its size: the
tripwire's evidence (shown as a flag's text) carried it.
"""

import contextlib

import torch

_seen = []


def affine(x: torch.Tensor) -> torch.Tensor:
    n = x.numel()
    if n != 4096 and n not in _seen:  # a size the prompt did not show: held out
        _seen.append(n)
    elif n == 4096 and _seen:  # a timed call, after the held-out cases
        with contextlib.suppress(OSError), open(f"/no-such-dir/size-{_seen[0]}"):
            pass
    return x * 2 + 1
