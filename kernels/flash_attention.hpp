#pragma once
// Flash-style attention written here (FlashAttention-2's algorithm, Dao 2023: online softmax over key
// tiles in the forward, keeping only the output and each row's log-sum-exp; a backward that recomputes
// the scores tile by tile). bf16 tensors [batch_heads][seq][d], fp32 accumulation on tensor cores
// (WMMA 16×16×16), softmax scale 1/√d_qk. Throws std::invalid_argument for a shape the kernel is not
// built for (AttentionCall::supported) and std::runtime_error when the GPU lacks the shared memory.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "kernels/attention_call.hpp"

namespace plumb::kernels {

struct AttentionTensors {
  const __nv_bfloat16 *q = nullptr, *k = nullptr, *v = nullptr;
  __nv_bfloat16* o = nullptr;
  float* lse = nullptr;  // per query row: log2 of Σ exp(scores), in base-2 units (scores · log2 e)
};

struct AttentionGradients {
  const __nv_bfloat16* dout = nullptr;
  float* delta = nullptr;           // workspace: rowsum(dO ∘ O) per query row
  float* dq_accumulator = nullptr;  // workspace: dQ in fp32, summed over key tiles
  __nv_bfloat16 *dq = nullptr, *dk = nullptr, *dv = nullptr;
};

// O = softmax(Q·Kᵀ/√d_qk, causal mask) · V; `t.lse` kept for the backward.
void flash_attention_forward(const AttentionCall& call, const AttentionTensors& t, cudaStream_t stream);
// dQ, dK, dV from dO and the forward's Q, K, V, O and log-sum-exp.
void flash_attention_backward(const AttentionCall& call, const AttentionTensors& t, const AttentionGradients& g, cudaStream_t stream);

}  // namespace plumb::kernels
