// Starting point for the CUDA GeGLU (tanh) gate. kernel.py already knows how to build
// this file (see _extension() there) and declares the launcher below; write the kernel,
// make the launcher start it on `stream`, and switch gelu_tanh_and_mul() in kernel.py
// over to _extension().gelu_tanh_and_mul_raw(...). torch's extension loader compiles
// this file with nvcc.
#include <cstdint>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

// x: (rows, 2 * cols) contiguous; y: (rows, cols). dtype: 0 float32, 1 float16, 2 bfloat16.
// Returns nullptr on success, else an error string.
const char* launch_gelu_tanh_and_mul(const void* x, void* y, int64_t rows, int64_t cols,
                                     int dtype, int threads, int64_t stream) {
  (void)x; (void)y; (void)rows; (void)cols; (void)dtype; (void)threads; (void)stream;
  return "launch_gelu_tanh_and_mul is not implemented yet";
}
