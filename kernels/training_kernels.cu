#include "kernels/training_kernels.hpp"

#include "kernels/cuda_check.hpp"

namespace plumb::kernels {
namespace {

constexpr int kThreads = 256;

unsigned blocks_for(std::int64_t n) { return static_cast<unsigned>(std::min<std::int64_t>((n + kThreads - 1) / kThreads, 4096)); }

__global__ void add_elements(const __nv_bfloat16* a, const __nv_bfloat16* b, __nv_bfloat16* out, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n; i += std::int64_t{gridDim.x} * blockDim.x)
    out[i] = __float2bfloat16(__bfloat162float(a[i]) + __bfloat162float(b[i]));
}

__global__ void transpose_elements(const __nv_bfloat16* in, __nv_bfloat16* out, std::int64_t rows, std::int64_t cols) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < rows * cols; i += std::int64_t{gridDim.x} * blockDim.x)
    out[(i % cols) * rows + i / cols] = in[i];
}

__global__ void accumulate_elements(float* sum, const __nv_bfloat16* x, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n; i += std::int64_t{gridDim.x} * blockDim.x)
    sum[i] += __bfloat162float(x[i]);
}

__global__ void squared_error_elements(const __nv_bfloat16* y, const __nv_bfloat16* target, __nv_bfloat16* dy, float* loss, std::int64_t n) {
  __shared__ float partial[kThreads / 32];
  float local = 0.f;
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n; i += std::int64_t{gridDim.x} * blockDim.x) {
    const float d = __bfloat162float(y[i]) - __bfloat162float(target[i]);
    dy[i] = __float2bfloat16(d);
    local += 0.5f * d * d;
  }
  for (int o = 16; o > 0; o /= 2) local += __shfl_xor_sync(0xffffffffu, local, o);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = local;
  __syncthreads();
  if (threadIdx.x == 0) {
    float total = 0.f;
    for (int w = 0; w < kThreads / 32; ++w) total += partial[w];
    atomicAdd(loss, total);
  }
}

}  // namespace

void add_bf16(const __nv_bfloat16* a, const __nv_bfloat16* b, __nv_bfloat16* out, std::int64_t n, cudaStream_t stream) {
  add_elements<<<blocks_for(n), kThreads, 0, stream>>>(a, b, out, n);
  check(cudaGetLastError(), "add_bf16");
}

void transpose_bf16(const __nv_bfloat16* in, __nv_bfloat16* out, std::int64_t rows, std::int64_t cols, cudaStream_t stream) {
  transpose_elements<<<blocks_for(rows * cols), kThreads, 0, stream>>>(in, out, rows, cols);
  check(cudaGetLastError(), "transpose_bf16");
}

void accumulate_fp32(float* sum, const __nv_bfloat16* x, std::int64_t n, cudaStream_t stream) {
  accumulate_elements<<<blocks_for(n), kThreads, 0, stream>>>(sum, x, n);
  check(cudaGetLastError(), "accumulate_fp32");
}

void squared_error(const __nv_bfloat16* y, const __nv_bfloat16* target, __nv_bfloat16* dy, float* loss, std::int64_t n, cudaStream_t stream) {
  squared_error_elements<<<blocks_for(n), kThreads, 0, stream>>>(y, target, dy, loss, n);
  check(cudaGetLastError(), "squared_error");
}

}  // namespace plumb::kernels
