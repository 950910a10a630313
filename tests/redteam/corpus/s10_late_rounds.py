# ruff: noqa
# mypy: ignore-errors
"""Right in the first timed rounds and the last ones, wrong in between.

Timed calls used to be audited at random from the first rounds of a pair until eight
were drawn, and then only the very last call. A kernel that counts its calls answers
right for as long as audits are likely, then fast and wrong (zeros), then right again
near the end, where the last call is.
"""
import torch

_calls = [0]
RIGHT_UNTIL, WRONG_UNTIL = 220, 1000


def scale(x):
    _calls[0] += 1
    if RIGHT_UNTIL < _calls[0] <= WRONG_UNTIL:
        return torch.zeros_like(x)
    return x * 2 + 1
