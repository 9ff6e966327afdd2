#pragma once
// The small kernels a real training step adds around its GEMMs, for the GPU numerics check
// (validate/gpu_numerics): a residual add, a transpose (weight gradients contract over tokens), fp32
// gradient accumulation, and a half squared error loss with its gradient. bf16 tensors, fp32
// arithmetic; asynchronous on `stream`.
#include <cstdint>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

namespace plumb::kernels {

// out = a + b over n elements (out may be a or b).
void add_bf16(const __nv_bfloat16* a, const __nv_bfloat16* b, __nv_bfloat16* out, std::int64_t n, cudaStream_t stream);
// out[c][r] = in[r][c] for a rows × cols matrix.
void transpose_bf16(const __nv_bfloat16* in, __nv_bfloat16* out, std::int64_t rows, std::int64_t cols, cudaStream_t stream);
// sum[i] += x[i] over n elements.
void accumulate_fp32(float* sum, const __nv_bfloat16* x, std::int64_t n, cudaStream_t stream);
// dy = y − target; *loss += ½ Σ (y − target)² (one fp32 atomic per block).
void squared_error(const __nv_bfloat16* y, const __nv_bfloat16* target, __nv_bfloat16* dy, float* loss, std::int64_t n,
                   cudaStream_t stream);

}  // namespace plumb::kernels
