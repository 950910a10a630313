# ruff: noqa
# mypy: ignore-errors
"""Pattern 4 (and 17): patch the clock so the candidate own calls look instant."""
import time

_real = time.perf_counter
_credit = [0.0]


def _fake():
    return _real() - _credit[0]


time.perf_counter = _fake


def scale(x):
    t = _real()
    y = x * 2 + 1
    _credit[0] += _real() - t
    return y
