# ruff: noqa
# mypy: ignore-errors
"""Outputs rewritten after the call: find the output folder through /proc/self/fd and
overwrite every recorded output file (here with zeros, as a policy would with answers it
computed later)."""
import os


def _rewrite():
    for fd in os.listdir("/proc/self/fd"):
        path = f"/proc/self/fd/{fd}"
        try:
            if not os.path.isdir(path):
                continue
            for name in os.listdir(path):
                if name.endswith(".bin"):
                    size = os.path.getsize(os.path.join(path, name))
                    with open(os.path.join(path, name), "r+b") as f:
                        f.write(b"\0" * size)
        except OSError:
            pass


def scale(x):
    _rewrite()
    return x * 2 + 1
