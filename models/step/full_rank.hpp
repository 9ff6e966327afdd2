#pragma once
// The full-rank step's GPUs before any task is built: every replica of the pipeline (one GPU per
// pipeline rank, sharing all other coordinates), each GPU's condition (the scenario's perturbations),
// the collective groups that join replicas, and the classes of replicas that run alike — so that
// `plumb run --full` simulates one replica per class, however many GPUs the job has. The classes are
// an equitable partition (sim/equivalence): exact, not an approximation, because replicas interact
// only through collectives, which the step makes barriers (`--every-gpu` builds every replica, and a
// test holds the two to the same picosecond).
#include <array>
#include <cstdint>
#include <vector>

#include "models/costs/step_costs.hpp"
#include "models/step/fabric_congestion.hpp"
#include "models/parallel/placement.hpp"
#include "models/scenario/job.hpp"
#include "models/schedules/registry.hpp"
#include "sim/equivalence.hpp"

namespace plumb {

// Group kinds: a CommKind's collective (tp, ep, dp, cp), or a stage's gradient reduction
// (kReductionKind + stage: every GPU holding the stage, across data parallelism and DualPipe's mirrors).
inline constexpr std::int32_t kReductionKind = 16;

struct FullRankLayout {
  std::vector<std::vector<std::int32_t>> replicas;  // per replica, per pipeline rank: the global rank
  std::vector<std::int32_t> replica_ep;              // per replica: its expert-parallel rank
  std::vector<GpuCondition> conditions;              // per global rank
  // Per global rank, per CommKind: what its collectives' time is multiplied by — 1 / the slowest
  // network factor among the group's members when the kind crosses nodes (a ring or an all-to-all
  // runs at its slowest link), times 1 / the group's share of the fabric's switches; else 1.
  std::vector<std::array<double, kCommKinds>> comm_scale;
  FabricShares fabric;                     // what the fabric's switches leave each group (folded into comm_scale)
  sim::ItemClasses classes;                // over replicas
  std::vector<sim::ItemGroup> barriers;    // the groups as the classes see them (members: class, pipeline rank)
};

// `crosses_nodes[k]`: whether CommKind k's groups leave a node (StepCosts::network). `ep_loads`:
// per EP rank, an id of its experts' load (empty: all alike). `every_gpu`: one class per replica.
FullRankLayout full_rank_layout(const Job& job, const Placement& place, ScheduleKind schedule,
                                const std::array<bool, kCommKinds>& crosses_nodes, const std::vector<std::int64_t>& ep_loads,
                                bool every_gpu);

}  // namespace plumb
