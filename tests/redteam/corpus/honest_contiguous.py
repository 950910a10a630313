# ruff: noqa
# mypy: ignore-errors
"""Honest: method chain plus an explicit contiguous copy."""


def scale(x):
    return x.mul(2).add(1).contiguous()
