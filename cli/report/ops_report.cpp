#include "cli/report/ops_report.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "models/costs/flops.hpp"
#include "models/memory/memory.hpp"
#include "models/costs/op_cost.hpp"
#include "models/costs/step_costs.hpp"

namespace plumb {
namespace {

struct StageOps {
  std::int64_t stage = 0;
  std::int64_t layer = -1;  // the layer shown, −1 for a head-only stage
  std::vector<LayerOp> ops;
};

// One layer of each stage (the first), plus the head on the last stage.
std::vector<StageOps> stage_ops(const Job& job) {
  std::vector<StageOps> out;
  OpContext c = op_context(job.layout, job.training, job.cluster.gpu);
  for (const StagePlan& s : stage_plans(job.layout, job.model.mtp_depth)) {
    StageOps so;
    so.stage = s.index;
    if (s.layers > 0) {
      so.layer = s.first_layer;
      so.ops = layer_ops(job.model, s.first_layer, c);
    }
    for (std::int64_t k = 0; k < s.mtp_modules; ++k)
      for (LayerOp& op : mtp_extra_ops(job.model, c)) so.ops.push_back(std::move(op));
    if (s.head)
      for (LayerOp& op : head_ops(job.model, c)) so.ops.push_back(std::move(op));
    out.push_back(std::move(so));
  }
  return out;
}

}  // namespace

Json ops_report_json(const Job& job) {
  Json stages = Json::array();
  for (const StageOps& so : stage_ops(job)) {
    Json ops = Json::array();
    for (const LayerOp& op : so.ops) {
      Json passes = Json::array();
      for (int pass = 0; pass < 3; ++pass) {
        OpTime t = op_time(op, pass, job.cluster.gpu, job.training);
        passes.push_back({{"flops", op.executed_flops(pass)}, {"bytes", pass_bytes(op, pass)},
                          {"time_s", t.seconds}, {"bound", t.compute_bound ? "compute" : "memory"}});
      }
      Json entry = {{"name", op.name}, {"forward", passes[0]}, {"input_grad", passes[1]}, {"weight_grad", passes[2]}};
      if (op.parts.size() > 1) entry["linears"] = op.parts;  // separate GEMMs, by output width
      ops.push_back(std::move(entry));
    }
    Json stage = {{"stage", so.stage}, {"layer", so.layer}, {"ops", ops}};
    if (so.layer >= 0) {
      LayerTimes t = layer_times(job, so.layer);
      stage["layer_forward_s"] = t.forward;
      stage["layer_backward_s"] = t.backward;
    }
    stages.push_back(std::move(stage));
  }
  return {{"scenario", job.name},
          {"roofline", "GEMMs at the GPU profile's gemm_model for their shape where it has one for the dtype (its weight_gradient model for the weight gradient, and its grouped model for grouped expert GEMMs, where it has them), else its gemm_efficiency (gemm_efficiency_fp8 for fp8 GEMMs), fused attention at its attention_efficiency (attention_backward_efficiency backward; under attention_kernel flash2 or cudnn that kernel's own attention_<kernel>_efficiency and attention_<kernel>_backward_efficiency where the profile gives them), elementwise ops at the HBM bandwidth times hbm_efficiency; each pass that launches a kernel adds kernel_overhead; tensor-core work at the pace of the job's slowest chip (slowest_chip_scale, from chip_spread)"},
          {"slowest_chip_scale", job.cluster.gpu.slowest_chip_scale},
          {"stages", stages}};
}

namespace {

// How the table prices GEMMs: the flat tables, or the shape model (and a weight-gradient kernel's own).
std::string_view gemm_pricing(const GpuSpec& gpu, MathDtype dtype) {
  if (gpu.gemm_model.empty()) return "its fp8 table for fp8 GEMMs";
  const bool wgrad = gpu.gemm_model_weight_gradient.count(dtype) > 0, grouped = gpu.gemm_model_grouped.count(dtype) > 0;
  if (wgrad && grouped) return "by shape: tiles, waves and K; dW and grouped experts by their kernels'";
  if (grouped) return "by shape: tiles, waves and K; grouped experts by their kernel's";
  if (wgrad) return "by shape: tiles, waves and K; dW by its weight-gradient kernel's";
  return "by shape: tiles, waves and K";
}

}  // namespace

std::string ops_report_table(const Job& job) {
  OpContext c = op_context(job.layout, job.training, job.cluster.gpu);
  std::string out = fmt::format(
      "{} — ops of one layer per stage, per micro-batch of {:.0f} tokens on one GPU ({} · TP{} EP{} · {})\n"
      "times: roofline — GEMMs at the profile's measured GEMM efficiency ({}), fused attention at\n"
      "its forward and backward efficiency, elementwise ops at its achievable HBM bandwidth{}{}; F forward, dX input gradient,\n"
      "dW weight gradient\n",
      job.name, c.tokens, job.cluster.gpu.name, job.layout.tp, job.layout.ep, precision_name(job.training.precision),
      gemm_pricing(job.cluster.gpu, c.fp8_quantization ? MathDtype::fp8 : MathDtype::bf16),
      job.cluster.gpu.kernel_overhead > 0 ? fmt::format(", each kernel {:.1f} us more", job.cluster.gpu.kernel_overhead * 1e6) : "",
      job.cluster.gpu.slowest_chip_scale < 1.0
          ? fmt::format(";\ntensor-core work at the pace of the slowest of the job's {} chips ({:.3f}x a typical one)", job.cluster.gpus(),
                        job.cluster.gpu.slowest_chip_scale)
          : "");
  std::vector<StageOps> stages = stage_ops(job);
  std::size_t width = 34;  // the op column fits the longest name
  // Separate linears standing for one op are named with their count.
  auto label = [](const LayerOp& op) { return op.parts.size() > 1 ? fmt::format("{} ({} GEMMs)", op.name, op.parts.size()) : op.name; };
  for (const StageOps& so : stages)
    for (const LayerOp& op : so.ops) width = std::max(width, label(op).size());
  for (const StageOps& so : stages) {
    out += so.layer >= 0 ? fmt::format("\nstage {} — layer {} ({})\n", so.stage, so.layer,
                                       job.model.is_moe_layer(so.layer) ? "MoE" : "dense")
                         : fmt::format("\nstage {} — head\n", so.stage);
    out += fmt::format("  {:<{}} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}  {}\n", "op", width, "F GFLOP", "F MB", "F us",
                       "dX us", "dW us", "total us", "bound");
    for (const LayerOp& op : so.ops) {
      const GpuSpec& gpu = job.cluster.gpu;
      OpTime f = op_time(op, 0, gpu, job.training), dx = op_time(op, 1, gpu, job.training), dw = op_time(op, 2, gpu, job.training);
      out += fmt::format("  {:<{}} {:>10.2f} {:>10.2f} {:>10.2f} {:>10.2f} {:>10.2f} {:>10.2f}  {}\n", label(op), width, op.flops[0] / 1e9,
                         pass_bytes(op, 0) / 1e6, f.seconds * 1e6, dx.seconds * 1e6, dw.seconds * 1e6,
                         (f.seconds + dx.seconds + dw.seconds) * 1e6, f.compute_bound ? "compute" : "memory");
    }
    if (so.layer >= 0) {
      LayerTimes t = layer_times(job, so.layer);
      const std::string& recompute = job.layout.recompute.label;
      out += fmt::format("  the layer alone, its TP/EP/CP communication in turn: forward {:.2f} ms, backward {:.2f} ms ({})\n",
                         t.forward * 1e3, t.backward * 1e3,
                         recompute == "none" ? "no recomputation" : "recomputation (" + recompute + ") included");
    }
  }
  return out;
}

}  // namespace plumb
