#include "models/step/full_rank_summary.hpp"

#include <algorithm>
#include <fmt/format.h>

namespace plumb {
namespace {

std::string describe(const Perturbation& p) {
  std::string out = p.what + ":";
  if (p.compute != 1.0) out += fmt::format(" compute ×{:.2f}", p.compute);
  if (p.network != 1.0) out += fmt::format(" network ×{:.2f}", p.network);
  if (p.fails_at) out += fmt::format(" fails at {:.3f} s", *p.fails_at);
  return out;
}

std::optional<FailureStall> failure_stall(const Job& job, const StepSimulation& sim) {
  if (sim.stalls.empty()) return std::nullopt;
  FailureStall f;
  for (const Perturbation& p : job.perturbations)
    if (p.fails_at && (f.what.empty() || *p.fails_at < f.fails_at)) {
      f.what = p.what;
      f.fails_at = *p.fails_at;
    }
  f.first_blocked = sim.step_time;
  for (std::size_t g = 0; g < sim.stalls.size(); ++g) {
    const sim::Stall& s = sim.stalls[g];
    if (s.failed) {
      f.failed_gpus += sim.gpu_count[g];
      continue;
    }
    if (s.stops == sim::kNever) continue;
    f.blocked_gpus += sim.gpu_count[g];
    const double at = sim::to_seconds(s.stops);
    f.all_blocked = std::max(f.all_blocked, at);
    if (at < f.first_blocked || f.first_blocked_at.empty()) {
      f.first_blocked = at;
      f.first_blocked_at = fmt::format("GPU {} (pp {}): {}", sim.gpu_rank[g], sim.gpu_pp[g], sim.graph.label(s.first_blocked));
    }
  }
  f.blocked_gpus += f.failed_gpus;
  return f;
}

}  // namespace

FullRankSummary full_rank_summary(const Job& job, const StepSimulation& sim) {
  FullRankSummary out;
  out.full = sim.full;
  if (!sim.full) return out;
  out.gpus = sim.job_gpus;
  out.simulated = static_cast<std::int64_t>(sim.gpu_rank.size());
  out.rounds = sim.class_rounds;
  for (std::size_t g = 0; g < sim.gpu_rank.size(); ++g)
    out.simulated_gpus.push_back({sim.gpu_rank[g], sim.gpu_pp[g], sim.gpu_count[g], sim.gpu_ep.empty() ? 0 : sim.gpu_ep[g],
                                  sim.gpu_steps[g], sim.gpu_condition[g]});
  out.ep_load = sim.ep_load;
  for (const Perturbation& p : job.perturbations) out.perturbations.push_back(describe(p));
  out.failure = failure_stall(job, sim);
  out.fabric = sim.fabric;
  return out;
}

}  // namespace plumb
