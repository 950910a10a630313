// RMSNorm over the last dimension: a correct but naive CUDA kernel.
// One block per row, two passes over global memory, a shared-memory tree reduction,
// scalar (non-vectorized) loads. Free of torch headers: kernel.py binds it.
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

template <typename T>
__global__ void rms_norm_kernel(const T* __restrict__ x, const T* __restrict__ w,
                                T* __restrict__ y, int64_t cols, float eps) {
  extern __shared__ float partial[];
  const int64_t row = blockIdx.x;
  const T* xr = x + row * cols;
  T* yr = y + row * cols;
  float acc = 0.0f;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    const float v = to_float(xr[c]);
    acc += v * v;
  }
  partial[threadIdx.x] = acc;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
    __syncthreads();
  }
  const float inv_rms = rsqrtf(partial[0] / static_cast<float>(cols) + eps);
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    yr[c] = from_float<T>(to_float(xr[c]) * inv_rms * to_float(w[c]));
  }
}

template <typename T>
const char* launch(const void* x, const void* w, void* y, int64_t rows, int64_t cols, float eps,
                   int threads, cudaStream_t stream) {
  rms_norm_kernel<T><<<static_cast<unsigned>(rows), threads, threads * sizeof(float), stream>>>(
      static_cast<const T*>(x), static_cast<const T*>(w), static_cast<T*>(y), cols, eps);
  const cudaError_t err = cudaGetLastError();
  return err == cudaSuccess ? nullptr : cudaGetErrorString(err);
}

}  // namespace

// dtype: 0 float32, 1 float16, 2 bfloat16. threads: a power of two <= 1024.
// Returns nullptr on success, else the CUDA error string.
const char* launch_rms_norm(const void* x, const void* w, void* y, int64_t rows, int64_t cols,
                            float eps, int dtype, int threads, int64_t stream) {
  if (threads < 1 || threads > 1024 || (threads & (threads - 1)) != 0)
    return "threads must be a power of two in [1, 1024]";
  cudaStream_t s = reinterpret_cast<cudaStream_t>(stream);
  switch (dtype) {
    case 0: return launch<float>(x, w, y, rows, cols, eps, threads, s);
    case 1: return launch<__half>(x, w, y, rows, cols, eps, threads, s);
    case 2: return launch<__nv_bfloat16>(x, w, y, rows, cols, eps, threads, s);
    default: return "unsupported dtype code";
  }
}
