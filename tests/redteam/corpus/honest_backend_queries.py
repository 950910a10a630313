# ruff: noqa
# mypy: ignore-errors
"""Honest, and asks torch about the machine before choosing a path (guarded for the CPU).

CUDA availability and count, cuDNN and MKL-DNN availability, the CPU's vector ISA, the
thread count and matmul precision: the kind of checks a real kernel makes once at
import and again per device. The answer is computed on every call either way.
"""
import torch

HAS_CUDA = torch.cuda.is_available() and torch.cuda.device_count() > 0
CUDNN = torch.backends.cudnn.is_available()
MKLDNN = torch.backends.mkldnn.is_available()
ISA = torch.backends.cpu.get_cpu_capability()
PRECISION = torch.get_float32_matmul_precision()


def scale(x):
    if x.is_cuda and HAS_CUDA:
        cap = torch.cuda.get_device_capability(x.device)
        chunk = 1 << 20 if cap >= (8, 0) else 1 << 18
    else:
        chunk = 1 << 16 if ISA.startswith("AVX") and torch.get_num_threads() > 1 else 1 << 15
    out = torch.empty_like(x)
    for s in range(0, x.numel(), chunk):
        torch.add(x[s : s + chunk] * 2.0, 1.0, out=out[s : s + chunk])
    return out
