#pragma once
// The cuda backend of plumb-validate run (CUDA builds only): GPU `device` split into one green context
// per pipeline rank (`sms_per_stage` SMs each), a stream and a cuBLASLt runner in each, every rank's
// buffers as plan_buffers sizes them, filled with non-zero data; kernels are cuBLASLt GEMMs and plumb's
// kernels (kernels/), sends device copies, events CUDA events.
#include <memory>

#include "validate/execute/pipeline_device.hpp"

namespace plumb {

// Throws std::runtime_error with the CUDA error, or when the GPU cannot be split as planned.
std::unique_ptr<PipelineDevice> make_cuda_pipeline_device(const VirtualRun& run, int device = 0);

}  // namespace plumb
