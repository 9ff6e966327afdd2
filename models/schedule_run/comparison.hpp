#pragma once
// Every schedule side by side on the same devices and model (`plumb schedule --compare`).
#include <cstdint>
#include <string>
#include <vector>

#include "models/schedule_run/pipeline_run.hpp"

namespace plumb {

// Every schedule on the same devices and model: per-op costs are for one rank's share of the model
// (1/pp of it); a schedule that cuts the model finer pays proportionally less per op.
struct ScheduleComparison {
  std::string name;
  std::string unavailable;  // why it cannot run with these numbers, else empty
  double makespan = 0, bubble = 0, bubble_fraction = 0, span_bubble = 0;
  double peak_activations = 0;  // in 1F1B-stage micro-batch units (one rank's share of the layers)
  double params = 0;            // per device, relative to 1F1B
};
std::vector<ScheduleComparison> compare_schedules(std::int64_t pp, std::int64_t microbatches, std::int64_t vp,
                                                  const OpCosts& costs);

}  // namespace plumb
