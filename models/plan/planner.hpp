#pragma once
// The capacity planner: every point of a PlanSpace is built into a job (invalid layouts rejected
// with their reason), checked against memory (what does not fit is counted, and the nearest misses
// kept), estimated analytically, and the best `top` re-ranked by the discrete-event simulation.
// Threads and shards split the points by index; the ranking is a total order, so it is the same
// whatever the split.
#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "models/plan/plan_space.hpp"
#include "models/costs/step_costs.hpp"

namespace plumb {

struct PlanResult {
  std::uint64_t index = 0;  // the point in the space
  std::string layout, gpu, fabric, precision;
  std::int64_t gpus = 0;
  bool moe_waves = false;  // MoE layers as fused waves (fine-grained EP)
  double step_time = 0, estimate = 0;
  bool simulated = false;
  double tokens_per_s_per_gpu = 0, mfu = 0, peak_bytes = 0, capacity_bytes = 0;
  double days = 0, days_with_failures = 0, gpu_hours = 0, cost_usd = 0, goodput = 1;
  // From the simulation only: per step, mean over pipeline ranks.
  std::array<double, kCommKinds> exposed{};
  double compute = 0, idle = 0;
};

// Why a layout of the space was turned down.
enum class RejectionKind {
  invalid_layout,  // it breaks a layout rule (the scenario field it concerns is the reason's `field`)
  does_not_fit,    // its peak stage needs more memory than the GPU has
  unpriceable,     // its collectives cannot be priced on this fabric
  too_slow,        // it takes longer than the plan's max_days
};

// A rejection's category: the kind, and for invalid layouts the field ("/parallel/vp"). Its key is how
// reports and shard files name it: the field, or "memory", "costs", "max_days".
struct RejectionReason {
  RejectionKind kind = RejectionKind::invalid_layout;
  std::string field;

  std::string_view key() const;
  static RejectionReason from_key(const std::string& key);
  bool operator<(const RejectionReason& other) const { return key() < other.key(); }
};

struct Rejection {
  std::uint64_t count = 0;
  std::string example;  // the first one met, in index order
  std::uint64_t example_index = 0;
};

struct PlanOutcome {
  std::uint64_t evaluated = 0;  // points considered
  std::uint64_t feasible = 0;
  std::map<RejectionReason, Rejection> rejected;
  std::vector<PlanResult> ranked;             // best first
  std::vector<PlanResult> near_misses;        // the layouts that came closest to fitting, closest first
  std::vector<std::size_t> pareto;            // indexes into ranked: not beaten on time, GPUs and cost at once
  double seconds = 0;
  std::uint64_t rejected_total() const;
};

struct PlanOptions {
  int threads = 0;  // 0: every core
  std::uint64_t shard = 0, shards = 1;
  bool simulate = true;  // re-rank the best with the discrete-event simulation
  // Told (points done, points in this shard) now and then while the points are evaluated, and once at
  // the end; calls never overlap. The planner itself prints nothing: the command renders it.
  std::function<void(std::uint64_t done, std::uint64_t total)> progress;
};

PlanOutcome run_plan(const Job& base, const PlanSpace& space, const PlanOptions& options);

// Combines shards' outcomes (each evaluated without simulation) into one, ranks it, and re-ranks its
// best with the simulation as a single run would.
PlanOutcome merge_plans(const Job& base, const PlanSpace& space, std::vector<PlanOutcome> parts, const PlanOptions& options);

// Orders by time to train with failures (or cost, for `cheapest`), then GPUs, cost and index — the
// simulated layouts first, then the estimated ones — and marks the Pareto frontier.
void rank_results(PlanOutcome& o, const PlanSpace& space);

}  // namespace plumb
