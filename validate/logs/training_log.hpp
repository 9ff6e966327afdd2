#pragma once
// Training logs as measurements: Megatron-LM's iteration lines ("iteration N/ M | … | elapsed time per
// iteration (ms): X | throughput per GPU (TFLOP/s/GPU): Y | …", megatron/training/training.py) and its
// memory report ("[Rank r] (after N iterations) memory (MB) | allocated: … | max allocated: … |
// reserved: … | max reserved: …", megatron/training/utils.py), and torchtitan's metric lines ("step: N
// loss: … memory: X GiB(P%)  tps: T  tflops: F  mfu: M%", torchtitan/components/metrics.py; "wps" before
// 2025). The steady state is the median over the iterations after the first (its warm-up).
#include <optional>
#include <string>
#include <vector>

#include "validate/published/published_case.hpp"

namespace plumb {

struct TrainingLog {
  std::string file;
  std::string format;  // "megatron-lm" or "torchtitan"
  std::vector<double> step_seconds, tflops_per_gpu, tokens_per_s_per_gpu, mfu;  // per logged iteration
  std::optional<double> max_allocated, max_reserved;  // bytes, the most over the log's ranks and reports
  std::size_t iterations = 0;
};

// Throws InputError naming the file and line of a malformed iteration line, or the file when it holds
// no iteration line of either format.
TrainingLog read_training_log(const std::string& path);

// The steady state as measurements (step time, TFLOP/s or tokens/s and MFU per GPU, peak memory) and
// which allocator figure the memory is.
std::vector<Measured> log_measurements(const TrainingLog& log, MemoryKind& memory_kind);

}  // namespace plumb
