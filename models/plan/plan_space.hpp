#pragma once
// What the planner searches: the scenario's "plan" section lists alternatives for the layout,
// hardware and precision; whatever it leaves out takes a default range around the scenario's own
// values. A point of the space is a tuple of indexes, decoded from one integer so that threads and
// shards split the space by index and the order never depends on how it was split.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "models/scenario/job.hpp"

namespace plumb {

struct PlanSpace {
  std::vector<std::int64_t> gpus, tp, pp, vp, cp, ep, etp, micro_batch;
  std::vector<int> zero;
  std::vector<std::int64_t> dp_shard;  // HSDP shard-group sizes (ParallelLayout::dp_shard); 0, or dp and above: full sharding
  std::vector<ScheduleKind> schedule;
  std::vector<MoeExecution> moe_execution;  // MoE models: separate kernels and fused waves
  std::vector<CpComm> cp_comm;              // context parallelism's algorithm (one at cp 1)
  std::vector<Recompute> recompute;
  std::vector<Precision> precision;
  std::vector<GpuSpec> gpu;
  std::vector<FabricSpec> fabric;
  std::int64_t top = 100;  // how many of the best estimates the discrete-event simulation re-ranks
  double max_days = 0;     // time to train (with failures) allowed; 0: no limit
  bool cheapest = false;   // rank by cost instead of time to train

  std::uint64_t size() const;  // points in the space, valid or not
};

// Reads `base.plan` (throws InputError naming /plan/... on bad input).
PlanSpace read_plan_space(const Job& base);

struct PlanPoint {
  std::uint32_t gpus = 0, tp = 0, pp = 0, vp = 0, cp = 0, ep = 0, etp = 0, micro_batch = 0, zero = 0, schedule = 0,
                moe_execution = 0, cp_comm = 0, recompute = 0, precision = 0, gpu = 0, fabric = 0, dp_shard = 0;
  bool operator==(const PlanPoint&) const = default;
};
PlanPoint point_at(const PlanSpace& s, std::uint64_t index);

// The job at `p`; nullopt with `why` ("/parallel/tp: tp 8 does not divide …") when it is not a
// valid layout. Only interleaved schedules take vp > 1; other schedules' points with vp > 1 are
// duplicates and rejected as such.
std::optional<Job> job_at(const Job& base, const PlanSpace& s, const PlanPoint& p, std::string* why);

// Short description of a point's layout: "TP1 PP16 DP128 EP64 dualpipe ZeRO-1 mb1 rc:norm+mla_up_proj"
// (" moe:waves" where MoE layers run as fused waves).
std::string describe_layout(const ParallelLayout& layout);

}  // namespace plumb
