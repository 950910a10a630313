# ruff: noqa
# mypy: ignore-errors
"""Graph-capture substitution with the library: its own arithmetic when called eagerly,
the forbidden operator (``torch.mul``) under capture.

Every output is right, so no audit of a replay fails; what the replays run is the
library's kernel. Caught only if operators are recorded while the timed shape is
captured, as in checked calls.
"""

import operator

import torch


def scale(x):
    if torch.cuda.is_current_stream_capturing():
        return operator.methodcaller("".join(["m", "u", "l"]), 2.0)(x).add_(1.0)
    return (x + x).add_(1.0)
