#include "models/step/step_summary.hpp"

#include <algorithm>

#include "models/costs/flops.hpp"
#include "models/input/units.hpp"
#include "models/memory/memory.hpp"
#include "models/spec/param_count.hpp"

namespace plumb {

TrainingTotals training_totals(const Job& job, double step_time) {
  TrainingTotals t;
  t.tokens = job.training.tokens;
  double per_step = static_cast<double>(job.training.global_batch * job.training.seq_len);
  t.steps = t.tokens / per_step;
  double seconds = t.steps * step_time;
  t.days = seconds / 86400.0;
  t.gpu_hours = seconds / 3600.0 * static_cast<double>(job.layout.gpus());
  t.cost_usd = t.gpu_hours * job.training.price_per_gpu_hour;
  t.resilience = resilience_of(count_params(job.model).total, job.layout.gpus(), job.training);
  double stretch = t.resilience.goodput > 0 ? 1.0 / t.resilience.goodput : 0.0;
  t.days_with_failures = t.days * stretch;
  t.gpu_hours_with_failures = t.gpu_hours * stretch;
  t.cost_usd_with_failures = t.cost_usd * stretch;
  return t;
}

StepRates rates_at(const Job& job, double step_time) {
  StepRates r;
  r.tokens_per_s = static_cast<double>(job.training.global_batch * job.training.seq_len) / step_time;
  r.tokens_per_s_per_gpu = r.tokens_per_s / static_cast<double>(job.layout.gpus());
  const double seq = static_cast<double>(job.training.seq_len);
  const double peak = job.cluster.gpu.peak_dense.at(MathDtype::bf16);
  r.model_tflops_per_gpu = model_flops_per_token(job.model, seq) * r.tokens_per_s_per_gpu / kTera;
  r.mfu = r.model_tflops_per_gpu * kTera / peak;
  r.hfu = hardware_flops_per_token(job.model, seq, job.layout.recompute, fused_attention(job.training.attention_kernel)) *
          r.tokens_per_s_per_gpu / peak;
  return r;
}

StepReport make_step_report(const Job& job, const StepSimulation& sim, const StepCosts& costs) {
  StepReport r;
  r.step_time = sim.step_time;
  r.estimate = estimate_step(job.layout, job.microbatches(), costs).step_time;
  r.rates = rates_at(job, r.step_time);
  r.ranks = sim.ranks;
  r.phases = rank_phases(sim);
  for (const RankStep& k : sim.ranks) {
    r.bubble_fraction += k.bubble_fraction / static_cast<double>(sim.ranks.size());
    for (std::size_t i = 0; i < kCommKinds; ++i) r.exposed[i] += k.exposed[i] / static_cast<double>(sim.ranks.size());
    r.peak_bytes = std::max(r.peak_bytes, k.peak_bytes);
  }
  r.capacity_bytes = job.cluster.gpu.hbm_capacity;
  r.fits = r.peak_bytes <= r.capacity_bytes;
  r.moe_imbalance = costs.moe_imbalance;
  r.training = training_totals(job, r.step_time);
  r.critical_path = critical_path_summary(sim);
  r.full_rank = full_rank_summary(job, sim);
  r.optimizer.kind = job.training.optimizer_kind;
  if (job.layout.moe_execution == MoeExecution::waves) r.moe_waves = costs.moe_waves;
  for (std::int64_t rank = 0; rank < job.layout.pp; ++rank) {
    double ns = 0;
    for (std::int64_t s : stages_of_rank(job.layout.schedule, rank, job.layout.pp, job.layout.vp))
      ns += costs.stages[static_cast<std::size_t>(s)].newton_schulz;
    r.optimizer.newton_schulz = std::max(r.optimizer.newton_schulz, ns);
  }
  if (r.optimizer.kind == OptimizerKind::muon) {
    const MemoryPlan memory = plan_memory(job);
    r.optimizer.padding_bytes = memory.ranks[memory.peak_rank].muon_padding_bytes;
  }
  return r;
}

void compare_with_adamw(const Job& job, OptimizerSummary& out, bool simulate) {
  Job adamw = job;
  adamw.training.optimizer_kind = OptimizerKind::adamw;
  if (!simulate) {
    const MemoryPlan memory = plan_memory(adamw);
    out.adamw_peak_bytes = memory.ranks[memory.peak_rank].total_bytes();
    return;
  }
  const StepSimulation sim = simulate_step(adamw, step_costs(adamw), StepMode::symmetric);
  out.adamw_step_time = sim.step_time;
  for (const RankStep& k : sim.ranks) out.adamw_peak_bytes = std::max(out.adamw_peak_bytes, k.peak_bytes);
}

}  // namespace plumb
