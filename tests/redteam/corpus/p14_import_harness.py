# ruff: noqa
# mypy: ignore-errors
"""Pattern 14: import the harness to reach its state."""
import aka.eval._candidate as harness


def scale(x):
    return x * 2 + 1
