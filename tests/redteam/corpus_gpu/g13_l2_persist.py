# ruff: noqa
# mypy: ignore-errors
"""Pattern 13: set aside persisting L2 through the CUDA runtime (ctypes)."""

import ctypes

import torch

_done = []


def scale(x):
    if not _done:
        _done.append(1)
        for name in ("libcudart.so", "libcudart.so.12", "libcudart.so.13"):
            try:
                lib = ctypes.CDLL(name)
            except OSError:
                continue
            lib.cudaDeviceSetLimit(6, 32 << 20)  # cudaLimitPersistingL2CacheSize
            break
    return x * 2 + 1
