#include "models/step/resilience.hpp"

#include <algorithm>
#include <cmath>

#include "models/spec/param_count.hpp"

namespace plumb {

Resilience resilience_of(double params, std::int64_t gpus, const TrainingSpec& t) {
  Resilience r;
  // What a restart needs: the 16-bit weights plus the optimizer's master weights and moments.
  r.checkpoint_bytes = params * (2.0 + t.optimizer.master + t.optimizer.moments);
  r.checkpoint_seconds = r.checkpoint_bytes / t.checkpoint_bandwidth;
  r.restart_seconds = t.restart_time;
  double failures_per_second = static_cast<double>(gpus) * t.failures_per_gpu_hour / 3600.0;
  if (failures_per_second <= 0) return r;  // no failures: goodput 1, no checkpoints needed
  r.job_mtbf_seconds = 1.0 / failures_per_second;
  r.interval_seconds = std::sqrt(2.0 * r.checkpoint_seconds * r.job_mtbf_seconds);
  double waste = (r.interval_seconds > 0 ? r.checkpoint_seconds / r.interval_seconds : 0.0) +
                 (r.interval_seconds / 2 + r.restart_seconds) / r.job_mtbf_seconds;
  r.goodput = std::max(0.0, 1.0 - waste);
  return r;
}

}  // namespace plumb
