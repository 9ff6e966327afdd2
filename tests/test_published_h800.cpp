// DeepSeek-V3's training on 2048 H800 against plumb's prediction of it: the technical report's 180K
// GPU-hours per trillion tokens (arXiv 2412.19437 §1), and the step its authors measured and broke
// down in "Insights into DeepSeek-V3" (ISCA 2025, arXiv 2505.09343) Table 4, multi-plane fat-tree
// column: 272.80B tokens a day, 19.926 s per step; of it 1.13 s in forward-only chunks ("1F"),
// 1.99 s in input backward ("1B"), 0.48 s in weight backward ("1W"), 13.95 s in the overlapped 1F1B
// phase, 2.06 s of bubble and 0.29 s of optimizer; 43.73% MFU of the bf16 peak counting the whole
// attention matrix (Megatron's convention, as plumb's MFU is).
#include <doctest/doctest.h>
#include <cmath>

#include "models/input/catalogue.hpp"
#include "models/costs/flops.hpp"
#include "cli/report/step_report.hpp"

using namespace plumb;

namespace {

constexpr double kStepSeconds = 19.926, kTokensPerDay = 272.80e9, kMfu = 0.4373;
constexpr double kForwardOnly = 1.13, kPairs = 13.95, kBubble = 2.06;

double relative(double a, double b) { return std::abs(a / b - 1); }

Job deepseek() { return load_scenario(data_dir() / "scenarios" / "deepseek-v3-2048xh800.json"); }

struct Simulated {
  StepSimulation sim;
  StepReport report;
};

Simulated simulate(const Job& job) {
  StepCosts costs = step_costs(job);
  Simulated s{simulate_step(job, costs), {}};
  s.report = make_step_report(job, s.sim, costs);
  return s;
}

// Seconds of `kind` ops per step, mean over the pipeline ranks.
double mean_seconds(const StepReport& r, OpKind kind) {
  double sum = 0;
  for (const RankPhases& p : r.phases) sum += p.seconds[static_cast<std::size_t>(kind)];
  return sum / static_cast<double>(r.phases.size());
}

}  // namespace

TEST_CASE("DeepSeek-V3: the published step is the published GPU-hours, and plumb counts the FLOPs its authors count") {
  Job job = deepseek();
  const double tokens_per_step = static_cast<double>(job.training.global_batch * job.training.seq_len);
  // 272.80B tokens a day at 15360 × 4096 tokens a step is the 19.926 s step: the table describes this job.
  CHECK(relative(86400.0 * tokens_per_step / kTokensPerDay, kStepSeconds) < 0.001);
  // …and that step over 14.8T tokens on 2048 GPUs is the report's 180K GPU-hours per trillion tokens
  // (so the gap is inside the step, not in ramps, restarts or evaluation).
  const double gpus = static_cast<double>(job.layout.gpus());
  CHECK(relative(kStepSeconds / tokens_per_step * 1e12 * gpus / 3600, 180e3) < 0.01);
  // 43.73% of 989.4 TFLOP/s over 272.80B tokens a day on 2048 GPUs: the model FLOPs per token.
  const double published = kMfu * job.cluster.gpu.peak_dense.at(MathDtype::bf16) / (kTokensPerDay / 86400 / gpus);
  const double plumb = model_flops_per_token(job.model, static_cast<double>(job.training.seq_len));
  INFO("published " << published / 1e9 << " GFLOP/token, plumb " << plumb / 1e9);
  CHECK(relative(plumb, published) < 0.01);
}

TEST_CASE("DeepSeek-V3: GPU-hours within 15% of the published; forward-only chunks take what they took, the backward is short") {
  // plumb's step is 17.84 s against 19.926 s: 161K GPU-hours per trillion tokens against 180K (−10.5%;
  // the issue asks for ±15%), at the pace of the slowest of the 2,048 chips (chip_spread), with the fp8
  // GEMMs and MLA's attention at the speed of the kernels V3
  // was trained with (hw_profiles/gpus/h800-sxm-deepseek-2024.json). Table 4 says where the rest is:
  // the forward-only chunks match (within 1%, not fitted), and the time missing is in the backward
  // chunk, ~19 ms per 4-layer chunk in every overlapped F&B pair and in every lone backward (README
  // "Fidelity"). Figures are means over the 16 pipeline ranks. Each must stay on the side it errs now;
  // a change that moves one more than 25% away has broken a term rather than missed one.
  Job job = deepseek();
  Simulated s = simulate(job);
  const StepReport& r = s.report;
  CHECK(r.fits);
  CHECK(r.peak_bytes < 80.0 * (1ull << 30));
  const double tokens_per_step = static_cast<double>(job.training.global_batch * job.training.seq_len);
  const double gpu_hours_per_trillion = r.step_time / tokens_per_step * 1e12 * static_cast<double>(job.layout.gpus()) / 3600;
  INFO("step " << r.step_time << " s, " << gpu_hours_per_trillion / 1e3 << "K GPU-hours per trillion tokens");
  CHECK(relative(gpu_hours_per_trillion, 180e3) < 0.15);
  CHECK(r.step_time < kStepSeconds);
  const double forward = mean_seconds(r, OpKind::forward), pairs = mean_seconds(r, OpKind::forward_backward);
  double bubble = 0;
  for (const RankPhases& p : r.phases) bubble += (p.before + p.waiting) / static_cast<double>(r.phases.size());
  INFO("forward-only " << forward << " s, F&B pairs " << pairs << " s, bubble " << bubble << " s");
  CHECK(relative(forward, kForwardOnly) < 0.05);
  CHECK(pairs < kPairs);
  CHECK(pairs > 0.75 * kPairs);
  CHECK(bubble < kBubble);
  CHECK(bubble > 0.75 * kBubble);
}
