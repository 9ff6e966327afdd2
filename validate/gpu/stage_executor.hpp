#pragma once
// Runs a VirtualRun on the GPU at hand (CUDA builds only): each pipeline rank's schedule on its own
// green context's stream with its share of the SMs, every op as the kernels the plan lists
// (cuBLASLt GEMMs, the memory-bound kernels of kernels/), a wait on the other rank's event where the
// schedule crosses ranks, and each send as a device copy on the sending rank's stream. Timed with CUDA
// events: every op, and every kernel grouped by the plumb op it stands for.
#include <cstdint>
#include <vector>

#include "validate/run/measured_run.hpp"
#include "validate/run/virtual_run.hpp"

namespace plumb {

struct ExecutorOptions {
  int device = 0;
  int warmup_steps = 1;
  int timed_steps = 3;
  bool kernel_times = true;  // events around every kernel (a few µs each on the host)
};

// Throws std::runtime_error with the CUDA error, or when the GPU cannot be split as planned.
MeasuredRun execute_virtual_run(const VirtualRun& run, const ExecutorOptions& options);

}  // namespace plumb
