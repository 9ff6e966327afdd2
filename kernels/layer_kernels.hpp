#pragma once
// The memory-bound kernels of a transformer layer, written here, each moving the bytes plumb's op
// catalogue counts for it: RMSNorm (forward; backward to the input), SwiGLU (forward and backward),
// MoE permute/un-permute as row gathers through an index, and a streaming copy for every other
// elementwise op (residual adds, fp8 quantization, the optimizer) and for pipeline sends between
// virtual stages. bf16 in and out, fp32 arithmetic; asynchronous on `stream`.
#include <cstddef>
#include <cstdint>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

namespace plumb::kernels {

// y = x / rms(x) · w over each of `rows` rows of `cols`; `rstd` (rows floats) keeps 1/rms for backward.
void rmsnorm_forward(const __nv_bfloat16* x, const __nv_bfloat16* w, __nv_bfloat16* y, float* rstd, std::int64_t rows,
                     std::int64_t cols, cudaStream_t stream);
// dx = rstd · (w·dy − x · rstd² · mean(w·dy·x)) per row (the weight's gradient, a column sum, is left out).
void rmsnorm_backward(const __nv_bfloat16* x, const __nv_bfloat16* w, const float* rstd, const __nv_bfloat16* dy, __nv_bfloat16* dx,
                      std::int64_t rows, std::int64_t cols, cudaStream_t stream);

// gate_up holds each row's gate then up halves (2·cols); out = silu(gate) · up.
void swiglu_forward(const __nv_bfloat16* gate_up, __nv_bfloat16* out, std::int64_t rows, std::int64_t cols, cudaStream_t stream);
void swiglu_backward(const __nv_bfloat16* gate_up, const __nv_bfloat16* dout, __nv_bfloat16* dgate_up, std::int64_t rows,
                     std::int64_t cols, cudaStream_t stream);

// out[i] = in[index[i] mod rows] for `rows` rows of `cols` (dispatch order ↔ token order).
void gather_rows(const __nv_bfloat16* in, const std::int32_t* index, __nv_bfloat16* out, std::int64_t rows, std::int64_t cols,
                 cudaStream_t stream);

// Copies `bytes` (a multiple of 16) with 16-byte loads and stores over `blocks` grid-striding blocks.
void stream_copy(const void* in, void* out, std::size_t bytes, int blocks, cudaStream_t stream);

// One thread block spins on the GPU's clock for `microseconds`: whatever waits on `stream` after it
// starts no earlier (a step's ranks are released together once the host has queued their work).
void hold_stream(cudaStream_t stream, int microseconds);

}  // namespace plumb::kernels
