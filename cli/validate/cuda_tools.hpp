#pragma once
// plumb-validate's GPU side (CUDA builds only): the cuda bench, the GPU numerics check, the NCCL
// collective sweep, and the GPU at hand as the machine `plumb-validate run --backend cuda` executes on.
#include <memory>
#include <string>

#include "cli/args/args.hpp"
#include "models/scenario/job.hpp"
#include "validate/execute/pipeline_device.hpp"
#include "validate/run/pipeline_numerics.hpp"

namespace plumb::cli {

int gpu_bench(const Args& args, const std::string& date);
// The GPU numerics check of one schedule (validate/gpu/gpu_numerics), and the tolerance it is held to.
NumericCheck gpu_numerics_check(const PipelineSchedule& schedule);
double gpu_numerics_tolerance();
int gpu_collectives(const Args& args);

// Puts GPU 0 into the job: its bundled profile (where one is of its model) and its SM count. Throws
// std::runtime_error when no GPU is visible.
void use_gpu_at_hand(Job& full);
// The cuda backend for the plan, once the plan's buffers are known to fit the GPU's memory (the plan
// is printed to stderr first). Throws std::runtime_error when they do not fit.
std::unique_ptr<PipelineDevice> gpu_pipeline_device(const VirtualRun& plan);

}  // namespace plumb::cli
