# ruff: noqa
# mypy: ignore-errors
"""Pattern 5: answers replayed from a cache keyed on the input address."""
_cache = {}


def scale(x):
    key = (x.data_ptr(), tuple(x.shape))
    if key not in _cache:
        _cache[key] = x * 2 + 1
    return _cache[key]
