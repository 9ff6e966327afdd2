#pragma once
// Device tensors for the flash attention kernel, and its timing for plumb calibrate's attention
// efficiencies (a GPU profile's attention_efficiency and attention_backward_efficiency).
#include <cstdint>

#include "kernels/cuda_check.hpp"
#include "kernels/flash_attention.hpp"

namespace plumb::kernels {

// Every tensor of one call's forward and backward, inputs filled with non-zero values (±[0.25, 0.75]).
struct AttentionBuffers {
  DeviceBuffer q, k, v, o, dout, dq, dk, dv, lse, delta, dq_accumulator;
  AttentionBuffers(const AttentionCall& c, std::uint32_t seed);
  AttentionTensors tensors();
  AttentionGradients gradients();
};

struct AttentionTiming {
  double forward_seconds = 0, backward_seconds = 0;  // medians; the backward's prologue and dQ conversion included
  int repetitions = 0;
};

// CUDA events, warm-up, the median of `repetitions` runs of each pass on one set of tensors (the
// kernel is compute-bound: its inputs staying in L2 between runs changes little).
AttentionTiming time_attention(const AttentionCall& c, int warmup = 3, int repetitions = 20);

}  // namespace plumb::kernels
