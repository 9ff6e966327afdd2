#pragma once
// What `plumb-validate bench` measures: the distinct GEMMs of a scenario (every stage's layer ops and
// head, forward, input and weight gradient, as plumb costs them) and a sweep of square sizes that
// spans the efficiency curve, in the format `plumb calibrate` reads.
#include <optional>
#include <string>
#include <vector>

#include "kernels/attention_call.hpp"
#include "models/scenario/job.hpp"
#include "models/input/json_reader.hpp"
#include "validate/calibrate/calibrate.hpp"

namespace plumb {

struct BenchGemm {
  std::int64_t m = 0, n = 0, k = 0;
  std::string what;  // "stage 5 experts: gate+up projection (input gradient)" or "sweep"
  MathDtype dtype = MathDtype::bf16;  // the inputs' type (fp8: e4m3 with a scale, bf16 output)
};

// Distinct shapes, smallest FLOPs first; `sweep` adds squares 256…16384.
std::vector<BenchGemm> bench_gemms(const Job* job, bool sweep);

// The flash attention calls to time: the scenario's (one GPU's heads of a micro-batch, causal) where
// the kernel has its head widths, and with `sweep` causal calls of 2^18 query rows at sequences of
// 1K…16K tokens, at the scenario's widths (128, 128 without one).
struct BenchAttention {
  kernels::AttentionCall call;
  std::string what;
};
std::vector<BenchAttention> bench_attention(const Job* job, bool sweep);

// The measurement file for `plumb calibrate`, with the device, driver, clock and date beside the rows:
// each timed GEMM (median seconds), each streaming-kernel run (`memory`), the seconds per kernel
// of `launch_kernels` back-to-back empty kernels, and each flash attention call's passes.
struct LaunchMeasurement {
  int kernels = 0;
  double seconds_per_kernel = 0;
};
Json measurements_json(const std::string& device, const std::string& driver, int clock_mhz, const std::string& date,
                       const std::vector<std::pair<BenchGemm, double>>& timed, const std::vector<MemoryMeasurement>& memory = {},
                       const std::optional<LaunchMeasurement>& launch = std::nullopt,
                       const std::vector<AttentionMeasurement>& attention = {});

}  // namespace plumb
