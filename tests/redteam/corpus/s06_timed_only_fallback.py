# ruff: noqa
# mypy: ignore-errors
"""A forbidden operator (``torch.mul``) called only in calls it believes are timed.

Checked calls come in twins (the same inputs twice over different poison); timed calls get
fresh values every time. So a call whose inputs differ from the previous call's, when that
call's differed from the one before too, is timed: there the product comes from the
library, elsewhere from additions. Outputs are right every time, so no audit fails; only
an operator record kept in timed calls as in checked ones sees the library call.
"""
import operator

import torch

_seen = []


def scale(x):
    fresh = not _seen or not torch.equal(_seen[-1], x)
    timed = fresh and len(_seen) >= 2 and not torch.equal(_seen[-2], _seen[-1])
    _seen.append(x.clone())
    del _seen[:-2]
    if timed:
        times = operator.methodcaller("".join(["m", "u", "l"]), 2.0)
        return times(x).add_(1.0)
    return (x + x).add_(1.0)
