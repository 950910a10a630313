# ruff: noqa
# mypy: ignore-errors
"""Pattern 11: compute in fp16 and widen back (precision downgrade)."""


def scale(x):
    return (x.half() * 2 + 1).to(x.dtype)
