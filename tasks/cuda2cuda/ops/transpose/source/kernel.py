"""2-D transpose: a naive CUDA kernel (kernel.cu) bound through torch's extension loader.

The extension is built on first call with ``torch.utils.cpp_extension.load_inline``, in a
build directory under the system temp dir named by a hash of the sources, so an edited
kernel.cu gets a fresh build and an unchanged one is reused.
"""

import hashlib
import tempfile
from pathlib import Path

import torch

THREADS = 256

_HERE = Path(__file__).resolve().parent
_CPP = r"""
const char* launch_transpose(const void* x, void* y, int64_t rows, int64_t cols, int elem_size,
                             int threads, int64_t stream);

void transpose_raw(int64_t x, int64_t y, int64_t rows, int64_t cols, int64_t elem_size,
                   int64_t threads, int64_t stream) {
  const char* err = launch_transpose(reinterpret_cast<const void*>(x), reinterpret_cast<void*>(y),
                                     rows, cols, static_cast<int>(elem_size),
                                     static_cast<int>(threads), stream);
  TORCH_CHECK(err == nullptr, "transpose CUDA kernel failed: ", err);
}
"""
_ext = None


def _extension():
    global _ext
    if _ext is None:
        from torch.utils.cpp_extension import load_inline

        cu = (_HERE / "kernel.cu").read_text()
        digest = hashlib.sha256((_CPP + cu).encode()).hexdigest()[:16]
        build = Path(tempfile.gettempdir()) / f"aka_cuda_transpose_{digest}"
        build.mkdir(parents=True, exist_ok=True)
        _ext = load_inline(
            name=f"aka_transpose_{digest}",
            cpp_sources=[_CPP],
            cuda_sources=[cu],
            functions=["transpose_raw"],
            build_directory=str(build),
            extra_cuda_cflags=["-O3"],
            verbose=False,
        )
    return _ext


def transpose(x: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()
    m, n = x.shape
    y = torch.empty((n, m), dtype=x.dtype, device=x.device)
    stream = torch.cuda.current_stream(x.device).cuda_stream
    _extension().transpose_raw(x.data_ptr(), y.data_ptr(), m, n, x.element_size(), THREADS, stream)
    return y
