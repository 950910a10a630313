# ruff: noqa
# mypy: ignore-errors
"""A candidate that never returns once it has compiled."""
import time


def scale(x):
    while True:
        time.sleep(0.05)
