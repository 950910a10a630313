# ruff: noqa
# mypy: ignore-errors
"""Records pruned: a wrong kernel (a copy of its input) that deletes what would judge it.

It walks every frame it can reach and empties lists and dicts that hold records or flags,
and drops the harness's objects' attributes, hoping the parent judges what is left.
"""
import sys


def _prune():
    frame = sys._getframe(1)
    while frame is not None:
        for value in list(frame.f_locals.values()):
            if isinstance(value, (list, dict)):
                try:
                    value.clear()
                except Exception:
                    pass
            for attr in ("records", "flags", "results"):
                try:
                    held = getattr(value, attr)
                    held.clear()
                except Exception:
                    pass
        frame = frame.f_back


def scale(x):
    _prune()
    return x.clone()
