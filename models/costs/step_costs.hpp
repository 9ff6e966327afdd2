#pragma once
// What one micro-batch costs on each model stage as the training step runs it: every pass (forward,
// input gradient, weight gradient, full backward) as a chain of segments, each some compute followed by
// (or beside) a communication — TP collectives, MoE all-to-alls, CP ring exchanges — plus the
// once-per-step terms: pipeline sends, gradient reduction, ZeRO parameter gathers, the optimizer.
// The discrete-event step and the analytic estimator both read these, so they cannot disagree on costs.
#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "models/costs/flops.hpp"
#include "models/costs/moe_waves.hpp"
#include "models/costs/pass.hpp"
#include "models/costs/stage_cost.hpp"
#include "models/scenario/job.hpp"
#include "models/schedules/registry.hpp"

namespace plumb {

// MoE layers run as fused waves (ParallelLayout::moe_execution): one MoE layer's forward on the busiest
// rank, the wave pipeline beside the same work run as separate kernels.
struct MoeWavesCost {
  WavePlan plan;
  WavePipeline forward;
  // Dispatch, expert kernels and combine one after another, as the fused kernel's own benchmark runs them
  // (the all-to-alls as plumb prices them, the memory passes separate_path_memory_bytes's).
  double separate_forward = 0;
  double flop_per_byte_bound = 0;    // 2 × expert width: the compute per NVLink byte overlap can hide
  double flop_per_byte = 0;          // what the GPU's compute rate over the link's bandwidth asks
};

struct StepCosts {
  std::vector<StageCost> stages;  // per model stage
  std::optional<MoeWavesCost> moe_waves;
  std::int32_t sms = 132;
  std::int32_t comm_sms = 20;
  double moe_imbalance = 1.0;
  // Which kinds of communication cross nodes (their group spans several): those share each GPU's
  // network port with one another when they overlap in the step (an EP all-to-all beside a DP
  // reduce-scatter or a pipeline send), each going at 1/n.
  std::array<bool, kCommKinds> network{};
  // What a weight gradient deferred past its input-gradient backward keeps, over an activation set (the
  // largest over the stages): the zero-bubble heuristic's memory counts it (OpTimes::stash).
  double weight_stash_share = 0;
};

// `expert_load`, when given, scales this rank's expert GEMMs by its own load over the mean (the full
// simulation gives each EP rank its sampled load); the all-to-alls keep the busiest rank's.
StepCosts step_costs(const Job& job, std::optional<double> expert_load = std::nullopt);

// The op times a schedule is ordered for: the slowest stage's forward, input gradient, weight gradient
// and hand-off (what Qi et al. feed their heuristic from profiled times).
OpTimes slowest_stage_op_times(const StepCosts& costs);
// The job's pipeline schedule as the training step runs it, and as plumb-validate executes it: the
// registry's schedule at the layout's shape, ordered for these costs.
PipelineSchedule step_schedule(const ParallelLayout& layout, std::int64_t microbatches, const StepCosts& costs);

// One transformer layer (`layer` of the model) for one micro-batch as step_costs prices it, its TP and
// EP communication included: the forward, and the full backward with its recomputation — what
// Korthikanti et al. 2022 (arXiv 2205.05198) Table 4 times per layer.
struct LayerTimes {
  double forward = 0;
  double backward = 0;
};
LayerTimes layer_times(const Job& job, std::int64_t layer);

// Tokens per EP rank over the mean when each of `tokens_per_rank` tokens on each of `ep` ranks picks
// `top_k` distinct experts of `experts` uniformly at random (seeded, so runs repeat); and its maximum.
std::vector<double> sampled_moe_loads(std::int64_t ep, std::int64_t experts, std::int64_t top_k, double tokens_per_rank,
                                      std::uint64_t seed);
double sampled_moe_imbalance(std::int64_t ep, std::int64_t experts, std::int64_t top_k, double tokens_per_rank,
                             std::uint64_t seed);

}  // namespace plumb
