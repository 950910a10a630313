# ruff: noqa
# mypy: ignore-errors
"""A hang inside a C call: libc's ``sleep`` through ``ctypes``, with SIGTERM ignored.

Python never regains control, so no Python-level signal handler, trace function or
timeout inside the process can stop it; only the evaluator's limit can.
"""
import ctypes
import signal

signal.signal(signal.SIGTERM, signal.SIG_IGN)
_libc = ctypes.CDLL(None)


def scale(x):
    _libc.sleep(3600)
    return x * 2 + 1
