# ruff: noqa
# mypy: ignore-errors
"""Pattern 4: a clock that runs fast, inflating every sample (the baseline too)."""
import time

_real = time.perf_counter
_calls = [0]


def _fast():
    _calls[0] += 1
    return _real() + 0.05 * _calls[0]


time.perf_counter = _fast


def scale(x):
    return x * 2 + 1
