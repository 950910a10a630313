// Materialized 2-D transpose: a correct but naive CUDA kernel.
// One thread per element in input order: reads are coalesced, writes are strided by M
// (one 32-byte sector per element). Element-size generic (2 or 4 bytes), bit-exact.
// Free of torch headers.
#include <cstdint>
#include <cuda_runtime.h>

namespace {

template <typename T>
__global__ void transpose_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t rows,
                                 int64_t cols) {
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= rows * cols) return;
  const int64_t i = idx / cols;
  const int64_t j = idx % cols;
  y[j * rows + i] = x[idx];
}

template <typename T>
const char* launch(const void* x, void* y, int64_t rows, int64_t cols, int threads,
                   cudaStream_t stream) {
  const int64_t total = rows * cols;
  const int64_t blocks = (total + threads - 1) / threads;
  transpose_kernel<T><<<static_cast<unsigned>(blocks), threads, 0, stream>>>(
      static_cast<const T*>(x), static_cast<T*>(y), rows, cols);
  const cudaError_t err = cudaGetLastError();
  return err == cudaSuccess ? nullptr : cudaGetErrorString(err);
}

}  // namespace

// elem_size: 2 or 4 bytes. threads: 1..1024.
// Returns nullptr on success, else the CUDA error string.
const char* launch_transpose(const void* x, void* y, int64_t rows, int64_t cols, int elem_size,
                             int threads, int64_t stream) {
  if (threads < 1 || threads > 1024) return "threads must be in [1, 1024]";
  cudaStream_t s = reinterpret_cast<cudaStream_t>(stream);
  switch (elem_size) {
    case 2: return launch<uint16_t>(x, y, rows, cols, threads, s);
    case 4: return launch<uint32_t>(x, y, rows, cols, threads, s);
    default: return "unsupported element size";
  }
}
