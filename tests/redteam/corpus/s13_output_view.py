# ruff: noqa
# mypy: ignore-errors
"""The transpose answered with a view of the input: no data moves at all.

Every element the core saves reads the right value through the view's strides, so the
checker finds the answer right, and the "kernel" costs nothing at any size. An output
must be memory of its own.
"""


def transpose(x):
    return x.t()
