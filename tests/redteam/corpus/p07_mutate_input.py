# ruff: noqa
# mypy: ignore-errors
"""Pattern 7: compute in place on the input and return it."""


def scale(x):
    return x.mul_(2).add_(1)
