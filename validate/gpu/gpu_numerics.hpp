#pragma once
// The pipeline numerics check on the GPU (CUDA builds only): the float64 check of
// validate/pipeline_numerics again, with the GPU's kernels and its streams. One SwiGLU MLP block with a
// residual per stage (cuBLASLt bf16 GEMMs, fp32 accumulation; the SwiGLU kernels of kernels/), a
// half squared error loss, fp32 weight-gradient accumulators. Pipelined: one stream per pipeline rank,
// the schedule's ops in the executor's queue order, each waiting on CUDA events of the ops on other
// ranks it needs, as plumb-validate run does; every activation buffer poisoned with NaN first, so an op
// that reads before its producer wrote shows. Serial: one stream, micro-batch after micro-batch.
// Every (stage, micro-batch) computation is the same kernels on the same inputs in both runs; only
// the order the micro-batches' weight gradients are added in differs, so the two agree to fp32
// rounding of those sums.
#include <cstdint>

#include "models/schedules/pipeline.hpp"
#include "validate/run/pipeline_numerics.hpp"

namespace plumb {

struct GpuNumericsShape {
  int tokens = 64, hidden = 64, ffn = 128;  // per micro-batch and stage; multiples of 16
};

// The tolerance the GPU run is held to: relative, on the loss and on the largest gradient difference.
inline constexpr double kGpuNumericsTolerance = 1e-3;

// Throws std::runtime_error with the CUDA error.
NumericCheck check_schedule_numerics_gpu(const PipelineSchedule& schedule, const GpuNumericsShape& shape = {}, std::uint64_t seed = 1);

}  // namespace plumb
