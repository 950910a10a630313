# ruff: noqa
# mypy: ignore-errors
"""Pattern 2: work finished by a background thread after the call returns."""
import threading
import time

import torch


def scale(x):
    out = torch.empty_like(x)

    def later():
        time.sleep(0.05)
        out.copy_(x * 2 + 1)

    threading.Thread(target=later, daemon=True).start()
    return out
