#pragma once
// What the full-rank step shows that the symmetric one cannot: how many GPUs it stood for and how many
// it simulated, each simulated GPU's time (a slow GPU computing longer, its peers waiting), each EP
// rank's expert load, and where a failing node stalls the step.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "models/scenario/job.hpp"
#include "models/step/step_builder.hpp"

namespace plumb {

struct SimulatedGpu {
  std::int64_t rank = 0, pp = 0, alike = 1, ep = 0;  // its global rank, pipeline rank, GPUs it stands for, EP rank
  RankStep time;                                     // compute, exposed communication, idle
  GpuCondition condition;
};

struct FailureStall {
  std::string what;              // the perturbation that fails: "node 12"
  double fails_at = 0;           // s into the step
  std::int64_t failed_gpus = 0;  // GPUs that fail
  double first_blocked = 0;      // s: the first other GPU that can go no further
  std::string first_blocked_at;  // where: "GPU 104 (pp 3): tp barrier"
  double all_blocked = 0;        // s: by when every GPU that would have finished its part is stuck
  std::int64_t blocked_gpus = 0; // GPUs of the job that cannot finish the step
};

struct FullRankSummary {
  bool full = false;
  std::int64_t gpus = 0, simulated = 0;
  int rounds = 0;
  std::vector<SimulatedGpu> simulated_gpus;
  std::vector<double> ep_load;                 // per EP rank (sampled routing), busiest expert / mean
  std::vector<std::string> perturbations;      // each as "gpu 13: compute ×0.80"
  std::optional<double> unperturbed_step_time; // the same job with no perturbations (the caller fills it in)
  std::optional<FailureStall> failure;
  FabricShares fabric;
};

FullRankSummary full_rank_summary(const Job& job, const StepSimulation& sim);

}  // namespace plumb
