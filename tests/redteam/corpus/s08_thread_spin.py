# ruff: noqa
# mypy: ignore-errors
"""A hang left behind: a non-daemon thread spins forever while every call returns right.

The process cannot exit normally while the thread runs; the answers are all correct.
"""
import threading

_started = []


def _spin():
    n = 0
    while True:
        n += 1


def scale(x):
    if not _started:
        _started.append(threading.Thread(target=_spin, daemon=False))
        _started[0].start()
    return x * 2 + 1
