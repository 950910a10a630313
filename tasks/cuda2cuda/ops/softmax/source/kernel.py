"""Row softmax: a naive CUDA kernel (kernel.cu) bound through torch's extension loader.

The extension is built on first call with ``torch.utils.cpp_extension.load_inline``, in a
build directory under the system temp dir named by a hash of the sources, so an edited
kernel.cu gets a fresh build and an unchanged one is reused.
"""

import hashlib
import tempfile
from pathlib import Path

import torch

THREADS = 128

_HERE = Path(__file__).resolve().parent
_DTYPE_CODE = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2}
_CPP = r"""
const char* launch_softmax(const void* x, void* y, int64_t rows, int64_t cols, int dtype,
                           int threads, int64_t stream);

void softmax_raw(int64_t x, int64_t y, int64_t rows, int64_t cols, int64_t dtype,
                 int64_t threads, int64_t stream) {
  const char* err = launch_softmax(reinterpret_cast<const void*>(x), reinterpret_cast<void*>(y),
                                   rows, cols, static_cast<int>(dtype),
                                   static_cast<int>(threads), stream);
  TORCH_CHECK(err == nullptr, "softmax CUDA kernel failed: ", err);
}
"""
_ext = None


def _extension():
    global _ext
    if _ext is None:
        from torch.utils.cpp_extension import load_inline

        cu = (_HERE / "kernel.cu").read_text()
        digest = hashlib.sha256((_CPP + cu).encode()).hexdigest()[:16]
        build = Path(tempfile.gettempdir()) / f"aka_cuda_softmax_{digest}"
        build.mkdir(parents=True, exist_ok=True)
        _ext = load_inline(
            name=f"aka_softmax_{digest}",
            cpp_sources=[_CPP],
            cuda_sources=[cu],
            functions=["softmax_raw"],
            build_directory=str(build),
            extra_cuda_cflags=["-O3"],
            verbose=False,
        )
    return _ext


def softmax(x: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()
    m, n = x.shape
    y = torch.empty_like(x)
    stream = torch.cuda.current_stream(x.device).cuda_stream
    _extension().softmax_raw(x.data_ptr(), y.data_ptr(), m, n, _DTYPE_CODE[x.dtype], THREADS, stream)
    return y
