#include "cli/report/step_report.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/report/full_rank_report.hpp"
#include "models/input/units.hpp"

namespace plumb {

namespace {

std::string_view kind_symbol(std::size_t k) { return op_kind_symbol(static_cast<OpKind>(k)); }

Json phases_json(const RankPhases& p) {
  Json ops = Json::object();
  for (std::size_t k = 0; k < RankPhases::kKinds; ++k)
    if (p.count[k] > 0) ops[std::string(kind_symbol(k))] = {{"count", p.count[k]}, {"seconds", p.seconds[k]}};
  return {{"ops", ops}, {"before_first_op_s", p.before}, {"waiting_s", p.waiting}, {"after_last_op_s", p.after}};
}

// The step by what each rank's schedule ran: one column per op kind the schedule has.
std::string phases_table(const std::vector<RankPhases>& phases) {
  std::array<bool, RankPhases::kKinds> used{};
  for (const RankPhases& p : phases)
    for (std::size_t k = 0; k < RankPhases::kKinds; ++k) used[k] = used[k] || p.count[k] > 0;
  std::string out = "\ntime by what each rank ran (s, ops counted with their communication; × how many)\n";
  out += fmt::format("{:>8} {:>9}", "pp rank", "start");
  for (std::size_t k = 0; k < RankPhases::kKinds; ++k)
    if (used[k]) out += fmt::format(" {:>15}", kind_symbol(k) == "FB" ? "F&B" : kind_symbol(k));
  out += fmt::format(" {:>9} {:>9}\n", "waiting", "after");
  for (std::size_t i = 0; i < phases.size(); ++i) {
    const RankPhases& p = phases[i];
    out += fmt::format("{:>8} {:>9.3f}", i, p.before);
    for (std::size_t k = 0; k < RankPhases::kKinds; ++k)
      if (used[k]) out += fmt::format(" {:>9.3f} ×{:<4}", p.seconds[k], p.count[k]);
    out += fmt::format(" {:>9.3f} {:>9.3f}\n", p.waiting, p.after);
  }
  return out + "  (F forward, B full backward, b input gradient, W weight gradient, F&B a forward and a backward overlapped;\n"
               "   start: before the first op; after: from the last op to the step's end — gradient reduction, optimizer)\n";
}

}  // namespace

namespace {

// What priced the step: the framework whose defaults the scenario took, and the GPU profile's kernel figures.
std::string pricing_text(const Job& job) {
  const GpuSpec& g = job.cluster.gpu;
  std::string out;
  if (!job.framework.id.empty()) {
    out += fmt::format("framework          {} ({})", job.framework.id, job.framework.name);
    if (!job.framework.applied.empty()) out += fmt::format("; took {}", fmt::join(job.framework.applied, ", "));
    out += "\n";
  }
  out += fmt::format("kernels            {} ({}): GEMMs", g.id, g.name);
  for (const auto& [dtype, model] : g.gemm_model)
  {
    out += fmt::format(" {} by shape (ceiling {:.1f}% of peak", math_dtype_name(dtype), 100 * model.ceiling);
    if (auto grouped = g.gemm_model_grouped.find(dtype); grouped != g.gemm_model_grouped.end())
      out += fmt::format("; grouped {:.1f}%", 100 * grouped->second.ceiling);
    out += ")";
  }
  if (g.gemm_model.empty() && !g.gemm_efficiency.empty()) out += fmt::format(" at {:.1f}% of peak", 100 * g.gemm_efficiency.back().second);
  const AttentionKernel kernel = job.training.attention_kernel;
  if (fused_attention(kernel) && g.attention_efficiency) {
    const std::string_view name = attention_kernel_name(kernel);
    // A library's kernel the profile has no rates for is priced at the profile's fastest kernel's: say so.
    const bool own = kernel == AttentionKernel::flash || g.attention_kernels.contains(name);
    out += fmt::format(", fused attention ({}{}) {:.1f}% (backward {:.1f}%)", name, own ? "" : ", at the fastest kernel's rates",
                       100 * g.attention_efficiency_of(name, false), 100 * g.attention_efficiency_of(name, true));
    if (job.model.dropout)
      out += g.attention_dropout_scale
                 ? fmt::format(" with its dropout at ×{:.2f} (backward ×{:.2f})", g.attention_dropout_scale_of(false),
                               g.attention_dropout_scale_of(true))
                 : std::string(" with its dropout at no cost (the profile has no attention_dropout_scale)");
  }
  out += fmt::format(", memory-bound ops at {:.1f}% of HBM", 100 * g.hbm_efficiency);
  if (const EagerElementwise* e = job.training.eager()) {
    if (!job.training.compiled) {
      out += " (elementwise ops as eager PyTorch kernels";
    } else {
      std::vector<std::string_view> kept;
      if (e->rope) kept.push_back("RoPE");
      if (e->cross_entropy) kept.push_back("the loss");
      out += fmt::format(" (compiled; {} as separate PyTorch kernels", fmt::join(kept, " and "));
    }
    if (g.unvectorized_elementwise_rate > 0)
      out += fmt::format(", unvectorized ones at {:.0f} G elements/s",
                         g.unvectorized_elementwise_rate * g.sustained_scale(MathDtype::bf16) / 1e9);
    out += ")";
  }
  if (job.training.precision == Precision::fp8) out += fmt::format(", fp8 casts {}", fp8_recipe_name(job.training.fp8_recipe));
  if (g.sustained_compute_scale < 1.0) out += fmt::format(", tensor-core work sustained at {:.3f}x", g.sustained_compute_scale);
  std::vector<std::string> own_scales;
  if (g.sustained_compute_scale_fp8) own_scales.push_back(fmt::format("fp8 {:.3f}x", *g.sustained_compute_scale_fp8));
  if (g.sustained_attention_scale) own_scales.push_back(fmt::format("attention {:.3f}x", *g.sustained_attention_scale));
  if (!own_scales.empty()) out += fmt::format(" ({})", fmt::join(own_scales, ", "));
  if (const std::optional<double> limit = g.job_power_limit(job.cluster.power_limit); limit && g.power_limit)
    out += fmt::format(" at the profile's {:.0f} W, clocks ×{:.3f} at this job's {:.0f} W limit{}", *g.power_limit, g.power_clock_scale, *limit,
                       job.cluster.power_limit ? "" : " (the profile's default_power_limit)");
  if (g.slowest_chip_scale < 1.0)
    out += fmt::format(", the slowest of {} chips at {:.3f}x a typical one (chip spread {:.2f}%)", job.cluster.gpus(), g.slowest_chip_scale,
                       100 * job.cluster.chip_spread.value_or(g.chip_spread));
  if (g.kernel_overhead > 0) out += fmt::format(", {:.1f} us a kernel", g.kernel_overhead * 1e6);
  if (job.training.host_overhead > 0)
    out += fmt::format("; the host {:.1f} us a kernel (training.host_overhead: the GPU waits where the host is behind)",
                       job.training.host_overhead * 1e6);
  return out + "\n";
}

}  // namespace

Json step_report_json(const Job& job, const StepReport& r) {
  Json exposed = Json::object();
  for (std::size_t i = 0; i < kCommKinds; ++i) exposed[std::string(comm_kind_name(static_cast<CommKind>(i)))] = r.exposed[i];
  Json stages = Json::array();
  for (std::size_t i = 0; i < r.ranks.size(); ++i) {
    const RankStep& k = r.ranks[i];
    Json e = Json::object();
    for (std::size_t j = 0; j < kCommKinds; ++j) e[std::string(comm_kind_name(static_cast<CommKind>(j)))] = k.exposed[j];
    stages.push_back({{"pp_rank", i}, {"compute_s", k.compute}, {"idle_s", k.idle}, {"bubble_fraction", k.bubble_fraction},
                      {"exposed_comm_s", e}, {"peak_bytes", k.peak_bytes}, {"peak_inflight_microbatches", k.peak_inflight},
                      {"phases", phases_json(r.phases[i])}});
  }
  Json framework = nullptr;
  if (!job.framework.id.empty())
    framework = {{"id", job.framework.id}, {"name", job.framework.name}, {"applied", job.framework.applied}};
  return {{"scenario", job.name},
          {"framework", framework},
          {"gpu_profile", job.cluster.gpu.id},
          {"gpus", job.layout.gpus()},
          {"slowest_chip_scale", job.cluster.gpu.slowest_chip_scale},
          {"schedule", std::string(schedule_name(job.layout.schedule))},
          {"microbatches", job.microbatches()},
          {"step_time_s", r.step_time},
          {"estimate_step_time_s", r.estimate},
          {"tokens_per_s", r.rates.tokens_per_s},
          {"tokens_per_s_per_gpu", r.rates.tokens_per_s_per_gpu},
          {"model_tflops_per_gpu", r.rates.model_tflops_per_gpu},
          {"mfu", r.rates.mfu},
          {"hfu", r.rates.hfu},
          {"bubble_fraction", r.bubble_fraction},
          {"exposed_comm_s", exposed},
          {"moe_imbalance", r.moe_imbalance},
          {"stages", stages},
          {"memory", {{"peak_bytes", r.peak_bytes}, {"capacity_bytes", r.capacity_bytes}, {"fits", r.fits}}},
          {"moe_waves", r.moe_waves ? Json{{"waves", r.moe_waves->plan.waves}, {"experts_per_wave", r.moe_waves->plan.experts_per_wave},
                                           {"forward_s", r.moe_waves->forward.total()}, {"separate_forward_s", r.moe_waves->separate_forward},
                                           {"dispatch_s", r.moe_waves->forward.dispatch}, {"compute_s", r.moe_waves->forward.compute},
                                           {"combine_s", r.moe_waves->forward.combine}, {"comm_bound", r.moe_waves->forward.comm_bound()},
                                           {"flop_per_byte", r.moe_waves->flop_per_byte},
                                           {"flop_per_byte_bound", r.moe_waves->flop_per_byte_bound}}
                                    : Json(nullptr)},
          {"optimizer",
           {{"kind", optimizer_name(r.optimizer.kind)}, {"newton_schulz_s", r.optimizer.newton_schulz},
            {"padding_bytes", r.optimizer.padding_bytes},
            {"adamw_step_time_s", r.optimizer.adamw_step_time > 0 ? Json(r.optimizer.adamw_step_time) : Json(nullptr)},
            {"adamw_peak_bytes", r.optimizer.adamw_peak_bytes > 0 ? Json(r.optimizer.adamw_peak_bytes) : Json(nullptr)}}},
          {"training",
           {{"tokens", r.training.tokens}, {"steps", r.training.steps}, {"days", r.training.days},
            {"gpu_hours", r.training.gpu_hours}, {"cost_usd", r.training.cost_usd}, {"goodput", r.training.resilience.goodput},
            {"checkpoint_bytes", r.training.resilience.checkpoint_bytes},
            {"checkpoint_s", r.training.resilience.checkpoint_seconds},
            {"checkpoint_interval_s", r.training.resilience.interval_seconds},
            {"job_mtbf_s", r.training.resilience.job_mtbf_seconds},
            {"days_with_failures", r.training.days_with_failures},
            {"gpu_hours_with_failures", r.training.gpu_hours_with_failures},
            {"cost_usd_with_failures", r.training.cost_usd_with_failures}}},
          {"critical_path", r.critical_path},
          {"full_rank", r.full_rank.full ? full_rank_json(r.full_rank) : Json(nullptr)}};
}

std::string step_report_table(const Job& job, const StepReport& r) {
  const ParallelLayout& p = job.layout;
  std::string out = fmt::format(
      "{}\n{} × {} · TP{}{} PP{} {} EP{} CP{}{} · {} · ZeRO-{} · {} micro-batches of {}\n\n", job.name, p.gpus(),
      job.cluster.gpu.name, p.tp, p.tp_overlap == TpOverlap::async ? " (async)" : "", p.pp, data_parallel_label(p), p.ep, p.cp,
      p.cp < 2 || p.cp_comm == CpComm::ring ? std::string() : fmt::format(" ({})", cp_comm_name(p.cp_comm)), schedule_name(p.schedule),
      p.zero, job.microbatches(), p.micro_batch);
  out += pricing_text(job) + "\n";
  out += fmt::format("step time          {:.3f} s   (analytic estimate {:.3f} s, {:+.1f}%)\n", r.step_time, r.estimate,
                     100 * (r.estimate / r.step_time - 1));
  out += fmt::format("tokens/s           {:.4g} total, {:.1f} per GPU\n", r.rates.tokens_per_s, r.rates.tokens_per_s_per_gpu);
  out += fmt::format("model TFLOP/s/GPU  {:.1f}   MFU {:.1f}%   HFU {:.1f}%   (of the bf16 dense peak)\n", r.rates.model_tflops_per_gpu,
                     100 * r.rates.mfu, 100 * r.rates.hfu);
  out += fmt::format("pipeline bubble    {:.1f}% of the step (mean over stages)\n", 100 * r.bubble_fraction);
  out += "exposed comm       ";
  for (std::size_t i = 0; i < kCommKinds; ++i)
    out += fmt::format("{} {:.1f} ms  ", comm_kind_name(static_cast<CommKind>(i)), r.exposed[i] * 1e3);
  out += "(per step, mean over stages)\n";
  if (job.model.moe) out += fmt::format("MoE load           busiest EP rank at {:.3f}× the mean\n", r.moe_imbalance);
  if (const auto& w = r.moe_waves) {
    const WavePipeline& f = w->forward;
    out += fmt::format("MoE waves          {} waves of {} experts a rank; one layer's forward {:.1f} us fused vs {:.1f} us as separate "
                       "kernels ({:.2f}×): dispatch {:.1f}, experts {:.1f}, combine {:.1f} us in all\n",
                       w->plan.waves, w->plan.experts_per_wave, f.total() * 1e6, w->separate_forward * 1e6,
                       w->separate_forward / f.total(), f.dispatch * 1e6, f.compute * 1e6, f.combine * 1e6);
    if (f.comm_bound())
      out += fmt::format("                   communication NOT hidden: a wave's NVLink traffic outlasts its GEMMs (the GPU asks "
                         "{:.0f} FLOP per NVLink byte; overlap holds below 2 × expert width = {:.0f})\n",
                         w->flop_per_byte, w->flop_per_byte_bound);
  }
  out += fmt::format("memory             peak {} of {} — {}\n", format_bytes(r.peak_bytes), format_bytes(r.capacity_bytes),
                     r.fits ? "fits" : "DOES NOT FIT");
  if (const OptimizerSummary& o = r.optimizer; o.kind == OptimizerKind::muon) {
    out += fmt::format("optimizer          Muon: Newton–Schulz {:.1f} ms a step on the busiest rank, bucket padding {}", o.newton_schulz * 1e3,
                       format_bytes(o.padding_bytes));
    if (o.adamw_step_time > 0)
      out += fmt::format("; vs AdamW: step {:+.1f} ms ({:+.2f}%), peak memory {:+.2f} GiB", (r.step_time - o.adamw_step_time) * 1e3,
                         100 * (r.step_time / o.adamw_step_time - 1), (r.peak_bytes - o.adamw_peak_bytes) / 1073741824.0);
    out += "\n";
  }
  out += "\n";
  out += fmt::format("{:>8} {:>10} {:>9} {:>8} {:>8} {:>8} {:>8} {:>8} {:>10} {:>9}\n", "pp rank", "compute s", "bubble", "tp ms",
                     "ep ms", "pp ms", "dp ms", "cp ms", "peak GiB", "in flight");
  for (std::size_t i = 0; i < r.ranks.size(); ++i) {
    const RankStep& k = r.ranks[i];
    out += fmt::format("{:>8} {:>10.3f} {:>8.1f}% {:>8.1f} {:>8.1f} {:>8.1f} {:>8.1f} {:>8.1f} {:>10.1f} {:>9}\n", i, k.compute,
                       100 * k.bubble_fraction, k.exposed[0] * 1e3, k.exposed[1] * 1e3, k.exposed[2] * 1e3, k.exposed[3] * 1e3,
                       k.exposed[4] * 1e3, k.peak_bytes / 1073741824.0, k.peak_inflight);
  }
  out += phases_table(r.phases);
  if (r.full_rank.full) out += full_rank_table(r.full_rank);
  out += "\ncritical path\n";
  const auto& cp = r.critical_path;
  const std::size_t keep = 4;
  for (std::size_t i = 0; i < cp.size(); ++i) {
    if (cp.size() > 2 * keep + 1 && i == keep) {
      out += fmt::format("  … {} more runs …\n", cp.size() - 2 * keep);
      i = cp.size() - keep - 1;
      continue;
    }
    out += "  " + cp[i] + "\n";
  }
  const TrainingTotals& t = r.training;
  if (t.tokens > 0) {
    out += fmt::format("\ntraining {:.4g} tokens: {:.0f} steps, {:.1f} days, {:.4g} GPU-hours ({:.1f}K per trillion tokens), ${:.4g}\n",
                       t.tokens, t.steps, t.days, t.gpu_hours, t.gpu_hours / (t.tokens / kTera) / 1e3, t.cost_usd);
    const Resilience& f = t.resilience;
    if (f.job_mtbf_seconds > 0)
      out += fmt::format("with failures: a failure every {:.1f} h; checkpoint of {} in {:.1f} s every {:.1f} min (Young); goodput "
                         "{:.1f}% → {:.1f} days, {:.4g} GPU-hours, ${:.4g}\n",
                         f.job_mtbf_seconds / 3600, format_bytes(f.checkpoint_bytes), f.checkpoint_seconds, f.interval_seconds / 60,
                         100 * f.goodput, t.days_with_failures, t.gpu_hours_with_failures, t.cost_usd_with_failures);
  }
  return out;
}

}  // namespace plumb
