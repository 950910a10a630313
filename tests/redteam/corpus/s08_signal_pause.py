# ruff: noqa
# mypy: ignore-errors
"""A hang in ``signal.pause()`` with every catchable termination signal ignored."""
import signal

for _sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGALRM, signal.SIGUSR1):
    signal.signal(_sig, signal.SIG_IGN)


def scale(x):
    while True:
        signal.pause()
