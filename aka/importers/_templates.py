"""File templates the importers and ``aka tasks new`` write (plain strings, ``str.format``)."""

from __future__ import annotations

KERNELBENCH_REFERENCE = '''"""Reference for the imported KernelBench problem {name}: its Model, run in float64.

Sizes come from the shape (they override the problem's module-level sizes); inputs come
from the problem's get_inputs() under the trial's seed; weights from a fixed seed.
"""

import hashlib
import importlib.util
import sys
from pathlib import Path

import torch

PROBLEM = Path(__file__).resolve().parent / "problem.py"
WEIGHT_SEED = 0
_MODELS = {{}}


def _problem(shape):
    name = "_aka_kb_" + hashlib.blake2s(str(PROBLEM).encode(), digest_size=6).hexdigest()
    module = sys.modules.get(name)
    if module is None:
        spec = importlib.util.spec_from_file_location(name, PROBLEM)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    vars(module).update(shape)
    return module


def _cast(x, dtype, device):
    if isinstance(x, torch.Tensor):
        return x.to(device=device, dtype=dtype) if x.is_floating_point() else x.to(device)
    return x


def make_inputs(shape, dtype, device, seed):
    problem = _problem(shape)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        inputs = problem.get_inputs()
    return tuple(_cast(x, dtype, device) for x in inputs)


def reference(*inputs, **shape):
    problem = _problem(shape)
    device = next((x.device for x in inputs if isinstance(x, torch.Tensor)), "cpu")
    key = (tuple(sorted(shape.items())), str(device))
    model = _MODELS.get(key)
    if model is None:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(WEIGHT_SEED)
            model = problem.Model(*problem.get_init_inputs())
        model = _MODELS.setdefault(key, model.double().to(device).eval())
    args = [_cast(x, torch.float64, device) for x in inputs]
    with torch.no_grad():
        return model(*args)
'''

KERNELBENCH_ENTRY = '''"""{kind} task from the KernelBench problem {name}: make ModelNew fast with {backend} kernels.

ModelNew starts as a copy of the problem's Model. Rewrite its forward (and __init__ if
you need to) with your own {backend} kernels; keep the parameters Model creates, in the
same order, because the weights come from seeding the constructor. Sizes and init
inputs come from problem.py (not editable). kernelbench_entry is how the evaluator calls
the model: leave it as it is.
"""

{imports}
import problem as _problem

{model_new}


WEIGHT_SEED = 0
_MODELS = {{}}


def kernelbench_entry(*inputs, **shape):
    """Build ModelNew once per shape, device and dtype (seeded like the reference), run it."""
    for size, value in shape.items():
        setattr(_problem, size, value)
    tensors = [x for x in inputs if isinstance(x, torch.Tensor)]
    device = tensors[0].device if tensors else torch.device("cpu")
    dtype = next((x.dtype for x in tensors if x.is_floating_point()), torch.float32)
    key = (tuple(sorted(shape.items())), str(device), dtype)
    model = _MODELS.get(key)
    if model is None:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(WEIGHT_SEED)
            model = ModelNew(*_problem.get_init_inputs())
        model = _MODELS.setdefault(key, model.to(device=device, dtype=dtype).eval())
    with torch.no_grad():
        return model(*inputs)
'''

AKA_TIMING_HELPER = '''# aka timing helper, placed here by `aka tasks import aka`: median of timed runs with the
# L2 flushed before each one; CUDA events on a GPU, perf_counter elsewhere.
def aka_time_ms(fn, *args, warmup=3, reps=20, flush_mb=256, **kwargs):
    """Median milliseconds of fn(*args, **kwargs) over reps runs, after warmup runs."""
    import statistics
    import time

    try:
        import torch

        cuda = torch.cuda.is_available()
    except ImportError:
        torch, cuda = None, False
    flush = torch.empty(flush_mb << 20, dtype=torch.uint8, device="cuda") if cuda else None
    for _ in range(warmup):
        fn(*args, **kwargs)
    times = []
    for _ in range(reps):
        if cuda:
            flush.zero_()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn(*args, **kwargs)
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end))
        else:
            t0 = time.perf_counter()
            fn(*args, **kwargs)
            times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)
'''

SCAFFOLD_REFERENCE = '''"""Reference for {name}: out = x * sigmoid(x) * scale, per row (scale has one value per column).

Replace the op with yours; keep make_inputs varied (not only standard normal) so null
answers and precision downgrades fail, and compute the reference in float64.
"""

import torch


def make_inputs(shape, dtype, device, seed):
    g = torch.Generator(device=device).manual_seed(seed)
    with torch.device(device):  # generated where it is used: fast at GPU sizes
        x = torch.randn(shape["M"], shape["N"], generator=g) * 3 + 0.5
        scale = torch.rand(shape["N"], generator=g) * 2 + 0.25
        return x.to(dtype=dtype), scale.to(dtype=dtype)


def reference(x, scale):
    x64 = x.double()
    return x64 * torch.sigmoid(x64) * scale.double()
'''

SCAFFOLD_TORCH = '''"""{name}, written in PyTorch: the starting point to rewrite as a {backend} kernel."""

import torch


def silu_scale(x: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    xf = x.float()
    return (xf * torch.sigmoid(xf) * scale.float()).to(x.dtype)
'''

SCAFFOLD_TRITON = '''"""{name}: a Triton kernel for out = x * sigmoid(x) * scale (the starting point)."""

import torch
import triton
import triton.language as tl

BLOCK = 512


@triton.jit
def silu_scale_kernel(x_ptr, s_ptr, out_ptr, n_cols, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    s = tl.load(s_ptr + offs % n_cols, mask=mask).to(tl.float32)
    y = x / (1.0 + tl.exp(-x)) * s
    tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


def silu_scale(x: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()
    out = torch.empty_like(x)
    n = x.numel()
    silu_scale_kernel[(triton.cdiv(n, BLOCK),)](x, scale.contiguous(), out, x.shape[-1], n, BLOCK=BLOCK)
    return out
'''

SCAFFOLD_CUDA_PY = '''"""{name}: builds kernel.cu with torch's extension loader and calls its launcher."""

import hashlib
import tempfile
from pathlib import Path

import torch

THREADS = 256

_HERE = Path(__file__).resolve().parent
_CPP = "void silu_scale_raw(int64_t x, int64_t s, int64_t y, int64_t n, int64_t cols, int64_t threads);"
_ext = None


def _extension():
    global _ext
    if _ext is None:
        from torch.utils.cpp_extension import load_inline

        cu = (_HERE / "kernel.cu").read_text()
        digest = hashlib.sha256((_CPP + cu).encode()).hexdigest()[:16]
        build = Path(tempfile.gettempdir()) / f"aka_cuda_{name}_{{digest}}"
        build.mkdir(parents=True, exist_ok=True)
        _ext = load_inline(
            name=f"aka_{name}_{{digest}}",
            cpp_sources=[_CPP],
            cuda_sources=[cu],
            functions=["silu_scale_raw"],
            build_directory=str(build),
            extra_cuda_cflags=["-O3"],
        )
    return _ext


def silu_scale(x: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
{body}
'''

SCAFFOLD_CUDA_BODY_TORCH = """    xf = x.float()
    return (xf * torch.sigmoid(xf) * scale.float()).to(x.dtype)"""

SCAFFOLD_CUDA_BODY_CUDA = """    x, scale = x.contiguous(), scale.contiguous()
    out = torch.empty_like(x)
    _extension().silu_scale_raw(
        x.data_ptr(), scale.data_ptr(), out.data_ptr(), x.numel(), x.shape[-1], THREADS
    )
    return out"""

SCAFFOLD_CU = """// {name}: out = x * sigmoid(x) * scale for float32 x (rows x cols) and scale (cols).
#include <cstdint>
#include <cuda_runtime.h>

__global__ void silu_scale_kernel(const float* x, const float* s, float* y, int64_t n, int64_t cols) {{
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n) {{
    float v = x[i];
    y[i] = v / (1.0f + __expf(-v)) * s[i % cols];
  }}
}}

void silu_scale_raw(int64_t x, int64_t s, int64_t y, int64_t n, int64_t cols, int64_t threads) {{
  int64_t blocks = (n + threads - 1) / threads;
  silu_scale_kernel<<<blocks, threads>>>(reinterpret_cast<const float*>(x),
                                         reinterpret_cast<const float*>(s),
                                         reinterpret_cast<float*>(y), n, cols);
}}
"""
