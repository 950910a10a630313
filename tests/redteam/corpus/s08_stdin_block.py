# ruff: noqa
# mypy: ignore-errors
"""A hang blocked on standard input, which the evaluator wrote the request on."""
import os


def scale(x):
    while True:
        if not os.read(0, 1 << 16):
            os.read(os.open("/dev/stdin", os.O_RDONLY), 1)
