"""RMSNorm over the last dimension: a naive CUDA kernel (kernel.cu) bound through torch.

The extension is built on first call with ``torch.utils.cpp_extension.load_inline``, in a
build directory under the system temp dir named by a hash of the sources, so an edited
kernel.cu gets a fresh build and an unchanged one is reused.
"""

import hashlib
import tempfile
from pathlib import Path

import torch

THREADS = 64
EPS = 1e-6

_HERE = Path(__file__).resolve().parent
_DTYPE_CODE = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2}
_CPP = r"""
const char* launch_rms_norm(const void* x, const void* w, void* y, int64_t rows, int64_t cols,
                            float eps, int dtype, int threads, int64_t stream);

void rms_norm_raw(int64_t x, int64_t w, int64_t y, int64_t rows, int64_t cols, double eps,
                  int64_t dtype, int64_t threads, int64_t stream) {
  const char* err = launch_rms_norm(reinterpret_cast<const void*>(x),
                                    reinterpret_cast<const void*>(w),
                                    reinterpret_cast<void*>(y), rows, cols,
                                    static_cast<float>(eps), static_cast<int>(dtype),
                                    static_cast<int>(threads), stream);
  TORCH_CHECK(err == nullptr, "rms_norm CUDA kernel failed: ", err);
}
"""
_ext = None


def _extension():
    global _ext
    if _ext is None:
        from torch.utils.cpp_extension import load_inline

        cu = (_HERE / "kernel.cu").read_text()
        digest = hashlib.sha256((_CPP + cu).encode()).hexdigest()[:16]
        build = Path(tempfile.gettempdir()) / f"aka_cuda_rms_norm_{digest}"
        build.mkdir(parents=True, exist_ok=True)
        _ext = load_inline(
            name=f"aka_rms_norm_{digest}",
            cpp_sources=[_CPP],
            cuda_sources=[cu],
            functions=["rms_norm_raw"],
            build_directory=str(build),
            extra_cuda_cflags=["-O3"],
            verbose=False,
        )
    return _ext


def rms_norm(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()
    weight = weight.contiguous()
    m, n = x.shape
    y = torch.empty_like(x)
    stream = torch.cuda.current_stream(x.device).cuda_stream
    _extension().rms_norm_raw(
        x.data_ptr(), weight.data_ptr(), y.data_ptr(), m, n, EPS, _DTYPE_CODE[x.dtype], THREADS, stream
    )
    return y
