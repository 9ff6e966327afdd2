#pragma once
// One training step simulated, summarised: step time, throughput, MFU, where the time goes, memory per
// stage, and the totals to train the scenario's token budget (what `plumb run` reports and the planner ranks by).
#include <array>
#include <optional>
#include <string>
#include <vector>

#include "models/scenario/job.hpp"
#include "models/step/resilience.hpp"
#include "models/step/full_rank_summary.hpp"
#include "models/step/step_builder.hpp"
#include "models/step/step_estimate.hpp"

namespace plumb {

struct TrainingTotals {
  double tokens = 0;
  double steps = 0;
  double days = 0;       // at the simulated step time, nothing failing
  double gpu_hours = 0;
  double cost_usd = 0;
  Resilience resilience;  // failures, restarts and Young's checkpoint interval
  double days_with_failures = 0, gpu_hours_with_failures = 0, cost_usd_with_failures = 0;
};

// Throughput and utilisation at a step time; MFU and HFU against the GPU's dense bf16 peak.
struct StepRates {
  double tokens_per_s = 0, tokens_per_s_per_gpu = 0, model_tflops_per_gpu = 0, mfu = 0, hfu = 0;
};
StepRates rates_at(const Job& job, double step_time);

// The optimizer the step ran and, under Muon, what it cost against AdamW on the same job.
struct OptimizerSummary {
  OptimizerKind kind = OptimizerKind::adamw;
  double newton_schulz = 0;   // seconds a step, the busiest pipeline rank (Muon)
  double padding_bytes = 0;   // bucket padding on the peak-memory rank (Muon)
  double adamw_step_time = 0, adamw_peak_bytes = 0;  // the same job under AdamW (0: not compared)
};
// The same job under AdamW — simulated (symmetric step, its peak memory as the step saw it) or, with
// `simulate` false, its memory plan alone: what `plumb run` and `plumb memory` compare Muon to.
void compare_with_adamw(const Job& job, OptimizerSummary& out, bool simulate);

struct StepReport {
  double step_time = 0;
  double estimate = 0;  // the analytic estimator's step time
  StepRates rates;
  double bubble_fraction = 0;  // mean over pipeline ranks of idle / step time
  std::array<double, kCommKinds> exposed{};  // seconds per step, mean over pipeline ranks
  std::vector<RankStep> ranks;
  std::vector<RankPhases> phases;  // per pipeline rank: the step by what its schedule ran
  double peak_bytes = 0, capacity_bytes = 0;
  bool fits = true;
  double moe_imbalance = 1.0;
  TrainingTotals training;
  std::vector<std::string> critical_path;
  FullRankSummary full_rank;  // --full only
  OptimizerSummary optimizer;
  // MoE layers as fused waves: one layer's forward on the busiest rank, beside separate kernels.
  std::optional<MoeWavesCost> moe_waves;
};

StepReport make_step_report(const Job& job, const StepSimulation& sim, const StepCosts& costs);
// Steps, days, GPU-hours and cost to train `job.training.tokens` at `step_time` seconds per step.
TrainingTotals training_totals(const Job& job, double step_time);

}  // namespace plumb
