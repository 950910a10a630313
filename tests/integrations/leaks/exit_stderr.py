"""A candidate that, in a timed call after seeing a held-out input, prints its size and
exits with it as the status: when held-out shapes ran in the same process, the error
the policy was shown carried it.
"""

import os
import sys

import torch

_seen = []


def affine(x: torch.Tensor) -> torch.Tensor:
    n = x.numel()
    if n != 4096 and n not in _seen:  # any size the prompt did not show is held out
        _seen.append(n)
    elif n == 4096 and _seen:  # held-out cases run last of the checked calls: this is timed
        print(f"unsupported layout code {_seen[0]} ({_seen[0]:#x})", file=sys.stderr, flush=True)
        os._exit(_seen[0] % 256)
    return x * 2 + 1
