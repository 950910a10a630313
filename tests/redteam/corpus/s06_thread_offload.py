# ruff: noqa
# mypy: ignore-errors
"""A forbidden operator (``torch.mul``) run on a thread of the candidate's own.

The operator recorder used to look only at the thread that called the candidate, so the
library call made on another thread, joined before the call returns, was charged to no
one (the tripwires see the thread; nothing in the verdict's path did).
"""
import operator
import threading

import torch


def scale(x):
    out = []
    worker = threading.Thread(target=lambda: out.append(operator.mul(x, 2.0)))
    worker.start()
    worker.join()
    return out[0].add_(1.0)
