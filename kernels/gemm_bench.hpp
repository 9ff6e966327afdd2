#pragma once
// Timing GEMMs through cuBLASLt as training frameworks run them (bf16 inputs and output, fp32
// accumulation, "TN" layout as a Linear layer's weight is stored), with CUDA events, warm-up,
// rotating buffers larger than L2 (so inputs come from HBM, as in training), inputs never zero,
// and the median of the repetitions.
#include <cstdint>
#include <string>

namespace plumb::kernels {

struct GemmTiming {
  double median_seconds = 0;
  double min_seconds = 0;
  int repetitions = 0;
};

// C[m×n] = A[m×k]·B[k×n] in bf16 on the current device. Throws std::runtime_error with the CUDA or
// cuBLAS error on failure (out of memory included).
GemmTiming time_gemm_bf16(std::int64_t m, std::int64_t n, std::int64_t k, int warmup = 5, int repetitions = 20);

// The current device's SM clock now, in MHz (for the measurement file).
int sm_clock_mhz();

}  // namespace plumb::kernels
