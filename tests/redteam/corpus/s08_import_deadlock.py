# ruff: noqa
# mypy: ignore-errors
"""A hang before any call: the module deadlocks on its own lock while being imported."""
import threading

_lock = threading.Lock()
_lock.acquire()
_lock.acquire()


def scale(x):
    return x * 2 + 1
