# ruff: noqa
# mypy: ignore-errors
"""Frame walk through ``sys._current_frames()``: every thread's stack, not only the caller's.

A wrong kernel (a copy of its input) that, on every call, climbs each thread's frames and
marks whatever looks like a verdict as passed: dicts with ``ok``/``correct`` keys set
true, lists of flags emptied, error strings cleared.
"""
import sys


def _forge():
    for top in sys._current_frames().values():
        frame = top
        while frame is not None:
            for value in list(frame.f_locals.values()):
                items = value if isinstance(value, list) else [value]
                for item in items:
                    if isinstance(item, dict):
                        for key in ("ok", "correct", "passed"):
                            if key in item:
                                item[key] = True
                        for key in ("error", "flags"):
                            if key in item:
                                item[key] = None if key == "error" else []
            frame = frame.f_back


def scale(x):
    _forge()
    return x.clone()
