#pragma once
// The host backend's kernels: what plumb-validate run's KernelSteps compute, on the CPU, one thread
// each. GEMMs and attention in float through Eigen (compute-bound: their bytes do not matter); the
// memory-bound kernels on 16-bit elements stored as bfloat16 bit patterns, so that they move the bytes
// plumb prices (2 per element), converted to float in registers.
#include <cstdint>
#include <vector>

#include "kernels/attention_call.hpp"
#include "kernels/gemm_call.hpp"

namespace plumb::host {

// The CPU time the calling thread has spent (CLOCK_THREAD_CPUTIME_ID), in seconds: what the host
// backend's clocks and its bench count.
double thread_cpu_seconds();

// Non-zero values in [−0.25, 0.75], a different sequence for each phase: buffer contents that are
// never all zeros (which can run faster than real data).
std::vector<float> varied_floats(std::size_t n, float phase);

// bfloat16 as its bits: the upper half of a float, rounded to nearest even.
std::uint16_t to_bf16(float x);
float from_bf16(std::uint16_t x);

// C[m×n] = A[m×k]·B[k×n] for each of g.batch operand sets laid end to end (column-major, as cuBLAS).
void gemm(const kernels::GemmCall& g, const float* a, const float* b, float* c);

// One flash-attention call's tensors, [batch_heads][seq][d] each, in float.
struct AttentionTensors {
  explicit AttentionTensors(const kernels::AttentionCall& c);
  std::vector<float> q, k, v, o, lse, dout, dq, dk, dv;
};
// Softmax(Q·Kᵀ/√d_qk)·V per head, causal or not, over 64-query blocks: a block's scores against the
// keys it may see only (causal: those up to its last query), its row log-sum-exp kept for the backward.
void attention_forward(const kernels::AttentionCall& c, AttentionTensors& t);
// dQ, dK, dV from dO, recomputing each block's scores from Q, K and the log-sum-exp (as a flash
// backward does, rather than storing them).
void attention_backward(const kernels::AttentionCall& c, AttentionTensors& t);

// y = x / rms(x) · w per row of `cols`; rstd keeps 1/rms per row. Backward: dx from dy.
void rmsnorm_forward(const std::uint16_t* x, const std::uint16_t* w, std::uint16_t* y, float* rstd, std::int64_t rows, std::int64_t cols);
void rmsnorm_backward(const std::uint16_t* x, const std::uint16_t* w, const float* rstd, const std::uint16_t* dy, std::uint16_t* dx,
                      std::int64_t rows, std::int64_t cols);
// y = silu(gate) · up over rows of [gate | up] (2·cols in, cols out). Backward: d[gate | up] from dy.
void swiglu_forward(const std::uint16_t* in, std::uint16_t* out, std::int64_t rows, std::int64_t cols);
void swiglu_backward(const std::uint16_t* in, const std::uint16_t* dy, std::uint16_t* din, std::int64_t rows, std::int64_t cols);
// y[i] = x[index[i]] for `rows` rows of `cols`.
void gather_rows(const std::uint16_t* x, const std::int32_t* index, std::uint16_t* y, std::int64_t rows, std::int64_t cols);

}  // namespace plumb::host
