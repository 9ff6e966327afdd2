#pragma once
// Runs a VirtualRun on a PipelineDevice: per step, every schedule op on its rank's stream in the order
// enqueue_order gives, each after waiting for the ops on other ranks it needs, its kernels as the plan
// lists them, its sends to the neighbouring stage's rank, then each rank's optimizer pass. Timed with
// the device's events: every op, every kernel grouped by the plumb op and pass it stands for, and the
// step (the median step's timeline kept). The same code drives the GPU and the host backend.
#include "validate/execute/pipeline_device.hpp"
#include "validate/run/measured_run.hpp"

namespace plumb {

struct ExecutorOptions {
  int warmup_steps = 1;
  int timed_steps = 3;
  bool kernel_times = true;  // events around every kernel (a few µs each on a GPU's host side)
};

// Throws std::runtime_error when timed_steps < 1 or the device fails.
MeasuredRun execute_virtual_run(const VirtualRun& run, PipelineDevice& device, const ExecutorOptions& options);

}  // namespace plumb
