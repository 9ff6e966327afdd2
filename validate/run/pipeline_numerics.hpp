#pragma once
// Does a pipeline schedule compute the right thing? A small model — one SwiGLU MLP block with a
// residual per stage, a few tokens per micro-batch, squared-error loss — is run in float64 through the
// schedule's ops in the order the executor queues them (forward, full backward, input-gradient and
// weight-gradient halves, DualPipe's F&B pairs; activations handed between stages by micro-batch),
// and again serially, micro-batch after micro-batch. The two must give the same loss and the same
// gradient for every weight, up to float64 summation order.
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "models/schedules/pipeline.hpp"

namespace plumb {

struct NumericCheck {
  double loss_pipelined = 0, loss_serial = 0;
  double max_gradient_difference = 0;  // max over weights of |pipelined − serial| / max |serial|
  std::int64_t ops = 0;                 // schedule ops run
  std::int64_t stages = 0, microbatches = 0;
  bool matches(double tolerance = 1e-12) const;
};

// Thrown when the schedule runs an op before what it needs (a backward before its forward, a
// forward before the previous stage's), runs a (stage, micro-batch) pass twice or leaves one out.
struct ScheduleDataflowError : std::logic_error {
  using std::logic_error::logic_error;
};

NumericCheck check_schedule_numerics(const PipelineSchedule& schedule, std::uint64_t seed = 1);

// The passes one schedule op runs, in order: a forward, an input gradient, a weight gradient, each of
// one (stage, micro-batch). A full backward is its input gradient then its weight gradient; an F&B
// pair its forward, then the other micro-batch's backward.
enum class StagePass : std::uint8_t { forward, input_grad, weight_grad };
struct OpPass {
  StagePass pass;
  StageWork work;
};
std::vector<OpPass> op_passes(const PipeOp& op);

}  // namespace plumb
