# ruff: noqa
# mypy: ignore-errors
"""Pattern 13: reach the CUDA runtime via ctypes (persisting-L2 tricks need it)."""
import ctypes


def scale(x):
    try:
        lib = ctypes.CDLL("libcudart.so")
        lib.cudaDeviceSetLimit(6, 1 << 20)  # cudaLimitPersistingL2CacheSize
    except OSError:
        pass
    return x * 2 + 1
