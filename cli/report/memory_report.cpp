#include "cli/report/memory_report.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "models/spec/param_count.hpp"
#include "models/parallel/placement.hpp"
#include "models/step/step_summary.hpp"

namespace plumb {
namespace {

std::string stage_label(const MemoryPlan& plan, const RankMemory& r) {
  std::vector<std::string> parts;
  for (std::int64_t index : r.stages) {
    const StagePlan& s = plan.stages[static_cast<std::size_t>(index)];
    std::string part = fmt::format("s{}:{}L", s.index, s.layers);
    if (s.embedding) part += "+E";
    if (s.mtp_modules > 0) part += fmt::format("+MTP{}", s.mtp_modules);
    if (s.head) part += "+H";
    parts.push_back(std::move(part));
  }
  return fmt::format("{}", fmt::join(parts, " "));
}

std::string inflight_label(const RankMemory& r) { return fmt::format("{:.0f}", fmt::join(r.inflight, "+")); }

std::string gib(double bytes) { return fmt::format("{:.1f}", bytes / 1073741824.0); }

}  // namespace

Json memory_report_json(const Job& job, const MemoryPlan& plan) {
  Json out;
  out["scenario"] = job.name;
  out["model"] = job.model.name;
  out["gpu"] = job.cluster.gpu.name;
  out["gpus"] = job.cluster.gpus();
  out["schedule"] = std::string(schedule_name(job.layout.schedule));
  out["microbatches"] = plan.microbatches;
  out["capacity_bytes"] = plan.capacity_bytes;
  out["fits"] = plan.fits();
  out["peak_stage"] = plan.peak_rank;
  out["peak_bytes"] = plan.ranks[plan.peak_rank].total_bytes();
  out["optimizer"] = std::string(optimizer_name(job.training.optimizer_kind));
  if (job.training.optimizer_kind == OptimizerKind::muon) {
    OptimizerSummary adamw;
    compare_with_adamw(job, adamw, false);
    out["muon"] = {{"padding_bytes", plan.ranks[plan.peak_rank].muon_padding_bytes}, {"adamw_peak_bytes", adamw.adamw_peak_bytes}};
  }
  ParamCounts counts = count_params(job.model);
  out["model_params"] = {{"total", counts.total},         {"activated", counts.activated},
                         {"embedding", counts.embedding}, {"position", counts.position},
                         {"layers", counts.layers},       {"routed_experts", counts.routed_experts},
                         {"final_norm", counts.final_norm}, {"head", counts.head},
                         {"mtp", counts.mtp}};
  Json stages = Json::array();
  for (const RankMemory& r : plan.ranks) {
    Json held = Json::array();
    for (std::size_t i = 0; i < r.stages.size(); ++i) {
      const StagePlan& s = plan.stages[static_cast<std::size_t>(r.stages[i])];
      held.push_back({{"stage", s.index}, {"layers", s.layers}, {"first_layer", s.first_layer},
                      {"embedding", s.embedding}, {"head", s.head}, {"mtp_modules", s.mtp_modules},
                      {"inflight_microbatches", r.inflight[i]}});
    }
    stages.push_back({{"pp_rank", r.pp_rank},
                      {"holds", held},
                      {"dense_params", r.dense_params},
                      {"expert_params", r.expert_params},
                      {"params_bytes", r.params_bytes},
                      {"grads_bytes", r.grads_bytes},
                      {"optimizer_bytes", r.optimizer_bytes},
                      {"muon_padding_bytes", r.muon_padding_bytes},
                      {"activations_bytes", r.activations_bytes},
                      {"weight_stash_bytes", r.weight_stash_bytes},
                      {"other_bytes", r.other_bytes()},
                      {"other", {{"cuda_context_bytes", r.cuda_context_bytes},
                                 {"workspace_bytes", r.workspace_bytes},
                                 {"zero3_prefetch_bytes", r.zero3_prefetch_bytes},
                                 {"zero3_root_bytes", r.zero3_root_bytes},
                                 {"zero3_stream_pool_bytes", r.zero3_stream_pool_bytes},
                                 {"pipeline_outputs_bytes", r.pipeline_outputs_bytes},
                                 {"reserved_bytes", r.reserved_bytes},
                                 {"loss_transient_bytes", r.loss_transient_bytes},
                                 {"recompute_working_bytes", r.recompute_working_bytes},
                                 {"attention_scores_bytes", r.attention_scores_bytes},
                                 {"grad_reduce_bytes", r.grad_reduce_bytes},
                                 {"transient_bytes", r.transient_bytes()}}},
                      {"total_bytes", r.total_bytes()},
                      {"fits", r.total_bytes() <= plan.capacity_bytes}});
  }
  out["stages"] = stages;
  Json groups = Json::array();
  if (auto placement = Placement::make(job.layout, job.cluster.fabric.gpus_per_node, nullptr))
    for (const GroupSpan& g : placement->spans())
      groups.push_back({{"kind", parallel_dim_name(g.kind)}, {"size", g.size}, {"groups", g.groups}, {"nodes_min", g.nodes_min},
                        {"nodes_max", g.nodes_max}, {"gpus_per_node_max", g.gpus_per_node_max}});
  out["groups"] = groups;
  return out;
}

std::string memory_report_table(const Job& job, const MemoryPlan& plan) {
  const ParallelLayout& p = job.layout;
  ParamCounts counts = count_params(job.model);
  std::string out;
  out += fmt::format("{}\n", job.name);
  out += fmt::format("  model    {}: {} parameters, {} activated per token{}\n", job.model.display_name,
                     format_count(counts.total), format_count(counts.activated),
                     counts.mtp > 0 ? fmt::format(" (+{} MTP)", format_count(counts.mtp)) : "");
  out += fmt::format("  cluster  {} nodes × {} {} = {} GPUs, {} HBM each\n", job.cluster.nodes,
                     job.cluster.fabric.gpus_per_node, job.cluster.gpu.name, job.cluster.gpus(),
                     format_bytes(plan.capacity_bytes));
  out += fmt::format("  layout   TP{} CP{} PP{} {}", p.tp, p.cp, p.pp, data_parallel_label(p));
  if (job.model.moe) out += fmt::format(" EP{} ETP{} EDP{}", p.ep, p.etp, p.edp());
  out += fmt::format(" · ZeRO-{} · {} · {} micro-batches of {} × {} tokens · recompute {} · {}\n", p.zero,
                     schedule_name(p.schedule), plan.microbatches, p.micro_batch, job.training.seq_len,
                     p.recompute.label, precision_name(job.training.precision));
  if (auto placement = Placement::make(p, job.cluster.fabric.gpus_per_node, nullptr)) {
    std::string spans;
    for (const GroupSpan& g : placement->spans()) {
      std::string nodes = g.nodes_min == g.nodes_max ? fmt::format("{}", g.nodes_min)
                                                     : fmt::format("{}–{}", g.nodes_min, g.nodes_max);
      spans += fmt::format("{}{} {}×{} node{}", spans.empty() ? "" : ", ", parallel_dim_name(g.kind), g.size, nodes,
                           g.nodes_max == 1 ? "" : "s");
    }
    out += fmt::format("  groups   {} (size × nodes spanned)\n", spans);
  }
  out += "\n";
  out += fmt::format("  {:>5}  {:<24} {:>9}  {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}  {}\n", "stage", "holds", "in-flight",
                     "params", "grads", "optim", "activ", "other", "total", "(GiB)");
  for (std::size_t i = 0; i < plan.ranks.size(); ++i) {
    const RankMemory& r = plan.ranks[i];
    bool fits = r.total_bytes() <= plan.capacity_bytes;
    out += fmt::format("  {:>5}  {:<24} {:>9}  {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}  {}{}\n", r.pp_rank,
                       stage_label(plan, r), inflight_label(r), gib(r.params_bytes), gib(r.grads_bytes),
                       gib(r.optimizer_bytes), gib(r.activations_bytes), gib(r.other_bytes()),
                       gib(r.total_bytes()), fits ? "" : "DOES NOT FIT", i == plan.peak_rank ? " ← peak" : "");
  }
  const RankMemory& peak = plan.ranks[plan.peak_rank];
  out += fmt::format("\n  {}: peak {} of {} on stage {} ({:.0f}% of HBM)\n", plan.fits() ? "FITS" : "DOES NOT FIT",
                     format_bytes(peak.total_bytes()), format_bytes(plan.capacity_bytes), peak.pp_rank,
                     100.0 * peak.total_bytes() / plan.capacity_bytes);
  if (job.training.optimizer_kind == OptimizerKind::muon) {
    OptimizerSummary adamw;
    compare_with_adamw(job, adamw, false);
    out += fmt::format("  optimizer Muon on the matrices (AdamW on the rest): bucket padding {} on the peak stage; under AdamW the "
                       "peak would be {} ({:+.1f} GiB)\n",
                       format_bytes(peak.muon_padding_bytes), format_bytes(adamw.adamw_peak_bytes),
                       (peak.total_bytes() - adamw.adamw_peak_bytes) / 1073741824.0);
  }
  return out;
}

}  // namespace plumb
