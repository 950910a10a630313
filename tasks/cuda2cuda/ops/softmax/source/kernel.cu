// Row softmax over the last dimension: a correct but naive CUDA kernel.
// One block per row, three passes over global memory (max, sum, normalize), shared-memory
// tree reductions with a barrier per step, scalar loads. Free of torch headers.
#include <cstdint>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

namespace {

template <typename T> __device__ __forceinline__ float to_float(T v);
template <> __device__ __forceinline__ float to_float<float>(float v) { return v; }
template <> __device__ __forceinline__ float to_float<__half>(__half v) { return __half2float(v); }
template <> __device__ __forceinline__ float to_float<__nv_bfloat16>(__nv_bfloat16 v) {
  return __bfloat162float(v);
}

template <typename T> __device__ __forceinline__ T from_float(float v);
template <> __device__ __forceinline__ float from_float<float>(float v) { return v; }
template <> __device__ __forceinline__ __half from_float<__half>(float v) {
  return __float2half_rn(v);
}
template <> __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

// Reduces partial[0..blockDim.x) in place; every thread returns the result.
template <bool IsMax>
__device__ float block_reduce(float* partial, float v) {
  partial[threadIdx.x] = v;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) {
      const float o = partial[threadIdx.x + s];
      partial[threadIdx.x] = IsMax ? fmaxf(partial[threadIdx.x], o) : partial[threadIdx.x] + o;
    }
    __syncthreads();
  }
  const float out = partial[0];
  __syncthreads();  // partial is reused by the next reduction
  return out;
}

template <typename T>
__global__ void softmax_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t cols) {
  extern __shared__ float partial[];
  const int64_t row = blockIdx.x;
  const T* xr = x + row * cols;
  T* yr = y + row * cols;
  float m = -INFINITY;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, to_float(xr[c]));
  const float row_max = block_reduce<true>(partial, m);
  float s = 0.0f;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) s += expf(to_float(xr[c]) - row_max);
  const float total = block_reduce<false>(partial, s);
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    yr[c] = from_float<T>(expf(to_float(xr[c]) - row_max) / total);
  }
}

template <typename T>
const char* launch(const void* x, void* y, int64_t rows, int64_t cols, int threads,
                   cudaStream_t stream) {
  softmax_kernel<T><<<static_cast<unsigned>(rows), threads, threads * sizeof(float), stream>>>(
      static_cast<const T*>(x), static_cast<T*>(y), cols);
  const cudaError_t err = cudaGetLastError();
  return err == cudaSuccess ? nullptr : cudaGetErrorString(err);
}

}  // namespace

// dtype: 0 float32, 1 float16, 2 bfloat16. threads: a power of two <= 1024.
// Returns nullptr on success, else the CUDA error string.
const char* launch_softmax(const void* x, void* y, int64_t rows, int64_t cols, int dtype,
                           int threads, int64_t stream) {
  if (threads < 1 || threads > 1024 || (threads & (threads - 1)) != 0)
    return "threads must be a power of two in [1, 1024]";
  cudaStream_t s = reinterpret_cast<cudaStream_t>(stream);
  switch (dtype) {
    case 0: return launch<float>(x, y, rows, cols, threads, s);
    case 1: return launch<__half>(x, y, rows, cols, threads, s);
    case 2: return launch<__nv_bfloat16>(x, y, rows, cols, threads, s);
    default: return "unsupported dtype code";
  }
}
