#pragma once
// Timing GEMMs through cuBLASLt as training frameworks run them (bf16 inputs and output, or fp8
// e4m3 inputs with per-tensor scales and a bf16 output; fp32 accumulation; "TN" layout as a Linear
// layer's weight is stored), with CUDA events, warm-up, rotating buffers larger than L2 (so inputs
// come from HBM, as in training), inputs never zero, and the median of the repetitions. The fp8 path
// scales per tensor, as cuBLASLt does on every fp8 GPU; DeepSeek-V3's 1×128 / 128×128 block scales
// cost more (DeepGEMM's figures in the Hopper profiles), so these timings bound fp8 from above.
#include <cstdint>
#include <string>

namespace plumb::kernels {

struct GemmTiming {
  double median_seconds = 0;
  double min_seconds = 0;
  int repetitions = 0;
};

enum class GemmInputs { bf16, fp8_e4m3 };

// C[m×n] = A[m×k]·B[k×n] on the current device. Throws std::runtime_error with the CUDA or cuBLAS
// error on failure (out of memory, or no fp8 algorithm on a GPU without fp8, included).
GemmTiming time_gemm(std::int64_t m, std::int64_t n, std::int64_t k, GemmInputs inputs, int warmup = 5, int repetitions = 20);

// The current device's SM clock now, in MHz (for the measurement file).
int sm_clock_mhz();

}  // namespace plumb::kernels
