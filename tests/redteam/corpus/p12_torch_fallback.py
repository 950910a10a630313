# ruff: noqa
# mypy: ignore-errors
"""Pattern 12: a Triton task answered with plain torch (no kernel)."""


def scale(x):
    return x * 2 + 1
