"""A candidate wrong on a shown case on purpose, that dies printing the size of any
other input: when held-out shapes ran beside a failing shown case, the error shown was
the held-out call's.
"""

import os
import sys

import torch

_calls = [0]


def affine(x: torch.Tensor) -> torch.Tensor:
    _calls[0] += 1
    if x.numel() != 4096:  # a size the prompt did not show: a held-out case
        print(
            f"cannot tile {tuple(x.shape)} {x.dtype}: size {x.numel()}", file=sys.stderr, flush=True
        )
        os._exit(7)
    if _calls[0] <= 2:  # the first visible case (both twins) wrong on purpose:
        return x * 2  # a visible failure keeps the held-out error from being hidden
    return x * 2 + 1
