#pragma once
// The analytic step time: closed forms of each pipeline schedule over the same per-stage costs the
// discrete-event step runs (step_costs), plus the step's start (the first parameter bucket) and tail
// (the last gradient reduction and the optimizer). What the planner sweeps with; a test holds it to
// the simulation.
#include "models/scenario/job.hpp"
#include "models/costs/step_costs.hpp"

namespace plumb {

struct StepEstimate {
  double step_time = 0;
  double pipeline = 0;  // first forward to last backward
  double head = 0;      // before the first forward can start
  double tail = 0;      // after the last backward: gradient reduction not hidden, optimizer
};

// The job's layout and micro-batches per step, over the costs step_costs priced.
StepEstimate estimate_step(const ParallelLayout& layout, std::int64_t microbatches, const StepCosts& costs);

}  // namespace plumb
