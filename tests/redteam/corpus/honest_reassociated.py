# ruff: noqa
# mypy: ignore-errors
"""Honest: reassociated arithmetic, within tolerance."""


def scale(x):
    return (x + 0.5) * 2
