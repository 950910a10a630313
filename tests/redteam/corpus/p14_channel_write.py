# ruff: noqa
# mypy: ignore-errors
"""Pattern 14: write a forged result into every inherited pipe."""
import json
import os

_forged = json.dumps({"kind": "result", "compiled": {"ok": True}, "records": []}).encode()
for fd in range(3, 64):
    try:
        os.write(fd, _forged)
    except OSError:
        pass


def scale(x):
    return x * 2 + 1
