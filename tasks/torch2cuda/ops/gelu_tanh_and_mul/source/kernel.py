"""GELU(tanh)-and-mul gate, written in PyTorch: the starting point to rewrite in CUDA.

``_extension()`` builds kernel.cu (the launcher ``launch_gelu_tanh_and_mul``) with
``torch.utils.cpp_extension.load_inline`` on first call, in a build directory under the
system temp dir named by a hash of the sources; ``gelu_tanh_and_mul`` does not use it yet.
"""

import hashlib
import tempfile
from pathlib import Path

import torch
import torch.nn.functional as F

THREADS = 256

_HERE = Path(__file__).resolve().parent
_DTYPE_CODE = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2}
_CPP = r"""
const char* launch_gelu_tanh_and_mul(const void* x, void* y, int64_t rows, int64_t cols,
                                     int dtype, int threads, int64_t stream);

void gelu_tanh_and_mul_raw(int64_t x, int64_t y, int64_t rows, int64_t cols, int64_t dtype,
                           int64_t threads, int64_t stream) {
  const char* err = launch_gelu_tanh_and_mul(
      reinterpret_cast<const void*>(x), reinterpret_cast<void*>(y), rows, cols,
      static_cast<int>(dtype), static_cast<int>(threads), stream);
  TORCH_CHECK(err == nullptr, "gelu_tanh_and_mul CUDA kernel failed: ", err);
}
"""
_ext = None


def _extension():
    global _ext
    if _ext is None:
        from torch.utils.cpp_extension import load_inline

        cu = (_HERE / "kernel.cu").read_text()
        digest = hashlib.sha256((_CPP + cu).encode()).hexdigest()[:16]
        build = Path(tempfile.gettempdir()) / f"aka_cuda_gelu_tanh_and_mul_{digest}"
        build.mkdir(parents=True, exist_ok=True)
        _ext = load_inline(
            name=f"aka_gelu_tanh_and_mul_{digest}",
            cpp_sources=[_CPP],
            cuda_sources=[cu],
            functions=["gelu_tanh_and_mul_raw"],
            build_directory=str(build),
            extra_cuda_cflags=["-O3"],
            verbose=False,
        )
    return _ext


def gelu_tanh_and_mul(x: torch.Tensor) -> torch.Tensor:
    n = x.shape[1] // 2
    a, b = x[:, :n].float(), x[:, n:].float()
    return (F.gelu(a, approximate="tanh") * b).to(x.dtype)
