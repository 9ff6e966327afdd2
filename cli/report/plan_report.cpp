#include "cli/report/plan_report.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <map>

#include "models/input/diagnostics.hpp"
#include "cli/report/schedule_report.hpp"

namespace plumb {
namespace {

double gib(double bytes) { return bytes / 1073741824.0; }

Json result_json(const PlanResult& r) {
  Json exposed = Json::object();
  for (std::size_t i = 0; i < kCommKinds; ++i) exposed[std::string(comm_kind_name(static_cast<CommKind>(i)))] = r.exposed[i];
  return {{"index", r.index},
          {"layout", r.layout},
          {"moe_execution", r.moe_waves ? "waves" : "separate"},
          {"gpus", r.gpus},
          {"gpu", r.gpu},
          {"fabric", r.fabric},
          {"precision", r.precision},
          {"step_time_s", r.step_time},
          {"estimate_step_time_s", r.estimate},
          {"simulated", r.simulated},
          {"tokens_per_s_per_gpu", r.tokens_per_s_per_gpu},
          {"mfu", r.mfu},
          {"peak_bytes", r.peak_bytes},
          {"capacity_bytes", r.capacity_bytes},
          {"days", r.days},
          {"days_with_failures", r.days_with_failures},
          {"gpu_hours", r.gpu_hours},
          {"cost_usd", r.cost_usd},
          {"goodput", r.goodput},
          {"compute_s", r.compute},
          {"idle_s", r.idle},
          {"exposed_comm_s", exposed}};
}

PlanResult result_from(const Json& j) {
  PlanResult r;
  r.index = j.at("index").get<std::uint64_t>();
  r.layout = j.at("layout").get<std::string>();
  r.moe_waves = j.value("moe_execution", std::string("separate")) == "waves";
  r.gpus = j.at("gpus").get<std::int64_t>();
  r.gpu = j.at("gpu").get<std::string>();
  r.fabric = j.at("fabric").get<std::string>();
  r.precision = j.at("precision").get<std::string>();
  r.step_time = j.at("step_time_s").get<double>();
  r.estimate = j.at("estimate_step_time_s").get<double>();
  r.simulated = j.at("simulated").get<bool>();
  r.tokens_per_s_per_gpu = j.at("tokens_per_s_per_gpu").get<double>();
  r.mfu = j.at("mfu").get<double>();
  r.peak_bytes = j.at("peak_bytes").get<double>();
  r.capacity_bytes = j.at("capacity_bytes").get<double>();
  r.days = j.at("days").get<double>();
  r.days_with_failures = j.at("days_with_failures").get<double>();
  r.gpu_hours = j.at("gpu_hours").get<double>();
  r.cost_usd = j.at("cost_usd").get<double>();
  r.goodput = j.at("goodput").get<double>();
  return r;
}

bool is_pareto(const PlanOutcome& o, std::size_t i) { return std::binary_search(o.pareto.begin(), o.pareto.end(), i); }

}  // namespace

std::optional<std::size_t> scenario_rank(const Job& base, const PlanOutcome& o) {
  const std::string layout = describe_layout(base.layout);
  const std::string precision(precision_name(base.training.precision));
  for (std::size_t i = 0; i < o.ranked.size(); ++i) {
    const PlanResult& r = o.ranked[i];
    if (r.layout == layout && r.gpus == base.layout.gpus() && r.precision == precision &&
        (r.gpu == base.cluster.gpu.id || r.gpu == base.cluster.gpu.name) &&
        (r.fabric == base.cluster.fabric.id || r.fabric == base.cluster.fabric.name))
      return i + 1;
  }
  return std::nullopt;
}

namespace {

// Where both MoE executions ranked: the best of each and which wins by how much (DualPipe-style
// overlap by the schedule, or DeepSeek-V4's fine-grained expert parallelism inside the MoE kernel).
std::string moe_execution_verdict(const PlanOutcome& o) {
  const PlanResult *waves = nullptr, *separate = nullptr;
  std::size_t waves_rank = 0, separate_rank = 0;
  for (std::size_t i = 0; i < o.ranked.size(); ++i) {
    const PlanResult& r = o.ranked[i];
    if (r.moe_waves && !waves) waves = &r, waves_rank = i + 1;
    if (!r.moe_waves && !separate) separate = &r, separate_rank = i + 1;
  }
  if (!waves || !separate) return "";
  const bool waves_win = waves->step_time < separate->step_time;
  const PlanResult& win = waves_win ? *waves : *separate;
  const PlanResult& lose = waves_win ? *separate : *waves;
  return fmt::format("\nMoE execution: fine-grained EP (fused waves) at best #{} ({}, {:.3f} s a step); separate kernels at best #{} "
                     "({}, {:.3f} s): {} faster by {:.1f}%\n",
                     waves_rank, waves->layout, waves->step_time, separate_rank, separate->layout, separate->step_time,
                     waves_win ? "fine-grained EP" : "separate kernels", 100 * (lose.step_time / win.step_time - 1));
}

}  // namespace

std::string plan_table(const Job& base, const PlanSpace& space, const PlanOutcome& o, std::size_t rows) {
  std::string out = fmt::format("{} — {} layouts searched in {:.2f} s ({:.0f} per second): {} feasible, {} rejected\n", base.name,
                                o.evaluated, o.seconds, static_cast<double>(o.evaluated) / std::max(o.seconds, 1e-9), o.feasible,
                                o.rejected_total());
  for (const auto& [reason, r] : o.rejected)
    out += fmt::format("  {:>9} {:<16} e.g. {}\n", r.count, reason.key(), r.example);
  out += fmt::format("ranked by {}; the best {} re-ranked by the discrete-event simulation (* = estimate only); P = Pareto frontier\n\n",
                     space.cheapest ? "cost to train" : "days to train with failures", std::min<std::size_t>(o.ranked.size(), static_cast<std::size_t>(space.top)));
  const std::size_t shown = std::min(rows, o.ranked.size());
  std::size_t width = 6, gpu_width = 3;
  for (std::size_t i = 0; i < shown; ++i) {
    width = std::max(width, o.ranked[i].layout.size());
    gpu_width = std::max(gpu_width, o.ranked[i].gpu.size());
  }
  out += fmt::format("{:>4} {:<1} {:<{}} {:>6} {:<{}} {:>9} {:>9} {:>6} {:>8} {:>7} {:>10} {:>10}\n", "#", "", "layout", width, "GPUs", "GPU",
                     gpu_width, "step s", "tok/s/GPU", "MFU", "peak GiB", "days", "GPU-hours", "cost $");
  for (std::size_t i = 0; i < shown; ++i) {
    const PlanResult& r = o.ranked[i];
    out += fmt::format("{:>4} {:<1} {:<{}} {:>6} {:<{}} {:>8.3f}{:1} {:>9.0f} {:>5.1f}% {:>8.1f} {:>7.1f} {:>10.4g} {:>10.4g}\n", i + 1,
                       is_pareto(o, i) ? "P" : "", r.layout, width, r.gpus, r.gpu, gpu_width, r.step_time, r.simulated ? "" : "*",
                       r.tokens_per_s_per_gpu, 100 * r.mfu, gib(r.peak_bytes), r.days_with_failures, r.gpu_hours, r.cost_usd);
  }
  if (auto rank = scenario_rank(base, o)) {
    out += fmt::format("\nthe scenario's own layout ({}) ranks #{} of {}\n", describe_layout(base.layout), *rank, o.ranked.size());
    const PlanResult &own = o.ranked[*rank - 1], &best = o.ranked.front();
    if (*rank > 1 && own.simulated && best.simulated) {
      // Where the time goes in each, per step and mean over pipeline ranks, from the simulation.
      out += fmt::format("  per step, its s (the best's): {:.3f} ({:.3f}) = compute {:.2f} ({:.2f}) + idle {:.2f} ({:.2f}) + exposed",
                         own.step_time, best.step_time, own.compute, best.compute, own.idle, best.idle);
      const char* sep = " ";
      for (std::size_t k = 0; k < kCommKinds; ++k)
        if (own.exposed[k] > 0 || best.exposed[k] > 0) {
          out += fmt::format("{}{} {:.2f} ({:.2f})", sep, comm_kind_name(static_cast<CommKind>(k)), own.exposed[k], best.exposed[k]);
          sep = ", ";
        }
      out += "\n";
    }
  } else
    out += fmt::format("\nthe scenario's own layout ({}) is not among the feasible layouts of this space\n", describe_layout(base.layout));
  return out + moe_execution_verdict(o);
}

std::string plan_csv(const PlanOutcome& o) {
  std::string out =
      "rank,pareto,layout,gpus,gpu,fabric,precision,step_time_s,simulated,tokens_per_s_per_gpu,mfu,peak_bytes,days,days_with_failures,"
      "gpu_hours,cost_usd,goodput\n";
  for (std::size_t i = 0; i < o.ranked.size(); ++i) {
    const PlanResult& r = o.ranked[i];
    out += fmt::format("{},{},\"{}\",{},{},{},{},{:.6g},{},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g}\n", i + 1,
                       is_pareto(o, i) ? 1 : 0, r.layout, r.gpus, r.gpu, r.fabric, r.precision, r.step_time, r.simulated ? 1 : 0,
                       r.tokens_per_s_per_gpu, r.mfu, r.peak_bytes, r.days, r.days_with_failures, r.gpu_hours, r.cost_usd, r.goodput);
  }
  return out;
}

Json plan_json(const Job& base, const PlanSpace& space, const PlanOutcome& o, std::size_t rows) {
  Json rejected = Json::object();
  for (const auto& [reason, r] : o.rejected) rejected[std::string(reason.key())] = {{"count", r.count}, {"example", r.example}};
  Json best = Json::array(), pareto = Json::array(), misses = Json::array();
  for (std::size_t i = 0; i < std::min(rows, o.ranked.size()); ++i) best.push_back(result_json(o.ranked[i]));
  for (std::size_t i : o.pareto) pareto.push_back(result_json(o.ranked[i]));
  for (const PlanResult& r : o.near_misses) misses.push_back(result_json(r));
  auto rank = scenario_rank(base, o);
  return {{"scenario", base.name},
          {"space_size", space.size()},
          {"evaluated", o.evaluated},
          {"feasible", o.feasible},
          {"rejected", rejected},
          {"seconds", o.seconds},
          {"objective", space.cheapest ? "cost" : "time"},
          {"best", best},
          {"pareto", pareto},
          {"near_misses", misses},
          {"scenario_layout", describe_layout(base.layout)},
          {"scenario_rank", rank ? Json(*rank) : Json()},
          {"scenario_result", rank ? result_json(o.ranked[*rank - 1]) : Json()}};
}

std::string plan_svg(const std::string& scenario, const PlanOutcome& o) {
  // Left: days to train against GPUs (log2), every feasible layout grey, the frontier joined in red.
  // Right: where the step time goes in the best ten simulated layouts.
  const double w = 520, h = 360, left = 60, top = 40, gap = 80;
  std::string out = fmt::format(
      R"(<svg xmlns="http://www.w3.org/2000/svg" width="{:.0f}" height="{:.0f}" font-family="sans-serif" font-size="11">)" "\n",
      left + 2 * w + gap + 40, top + h + 90);
  out += fmt::format(R"(<text x="{}" y="22" font-size="14">{} — Pareto frontier and time breakdown</text>)" "\n", left, xml_escape(scenario));
  if (o.ranked.empty()) return out + "</svg>\n";
  double gmin = 1e300, gmax = 0, dmin = 1e300, dmax = 0;
  for (const PlanResult& r : o.ranked) {
    gmin = std::min(gmin, std::log2(static_cast<double>(r.gpus)));
    gmax = std::max(gmax, std::log2(static_cast<double>(r.gpus)));
    dmin = std::min(dmin, r.days_with_failures);
    dmax = std::max(dmax, r.days_with_failures);
  }
  if (gmax - gmin < 1) gmax = gmin + 1;
  if (dmax - dmin < 1e-9) dmax = dmin + 1;
  auto x = [&](double gpus) { return left + (std::log2(gpus) - gmin) / (gmax - gmin) * (w - 20) + 10; };
  auto y = [&](double days) { return top + h - (days - dmin) / (dmax - dmin) * (h - 20) - 10; };
  out += fmt::format(R"(<rect x="{}" y="{}" width="{}" height="{}" fill="none" stroke="#888"/>)" "\n", left, top, w, h);
  for (const PlanResult& r : o.ranked)
    out += fmt::format(R"(<circle cx="{:.1f}" cy="{:.1f}" r="2" fill="#bbbbbb"><title>{} · {} GPUs · {:.1f} days</title></circle>)" "\n",
                       x(static_cast<double>(r.gpus)), y(r.days_with_failures), xml_escape(r.layout), r.gpus, r.days_with_failures);
  std::vector<std::size_t> front = o.pareto;
  std::sort(front.begin(), front.end(), [&](std::size_t a, std::size_t b) { return o.ranked[a].gpus < o.ranked[b].gpus; });
  std::string path;
  for (std::size_t i : front) {
    const PlanResult& r = o.ranked[i];
    path += fmt::format("{:.1f},{:.1f} ", x(static_cast<double>(r.gpus)), y(r.days_with_failures));
    out += fmt::format(R"(<circle cx="{:.1f}" cy="{:.1f}" r="4" fill="#d62728"><title>{} · {} GPUs · {:.1f} days · ${:.4g}</title></circle>)" "\n",
                       x(static_cast<double>(r.gpus)), y(r.days_with_failures), xml_escape(r.layout), r.gpus, r.days_with_failures, r.cost_usd);
  }
  out += fmt::format(R"(<polyline points="{}" fill="none" stroke="#d62728"/>)" "\n", path);
  out += fmt::format(R"(<text x="{}" y="{}">GPUs (log scale, {:.0f} … {:.0f})</text>)" "\n", left + w / 2 - 60, top + h + 20,
                     std::exp2(gmin), std::exp2(gmax));
  out += fmt::format(R"svg(<text x="10" y="{}" transform="rotate(-90 10 {})">days to train ({:.1f} … {:.1f})</text>)svg" "\n", top + h / 2 + 60,
                     top + h / 2 + 60, dmin, dmax);
  // Breakdown bars.
  const double bx = left + w + gap;
  const char* colours[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#cccccc"};
  const char* names[] = {"compute", "tp", "ep", "pp", "dp", "cp", "idle"};
  std::vector<const PlanResult*> sims;
  for (const PlanResult& r : o.ranked)
    if (r.simulated && sims.size() < 10) sims.push_back(&r);
  double longest = 0;
  for (const PlanResult* r : sims) longest = std::max(longest, r->step_time);
  const double bar = sims.empty() ? 0 : (h - 10) / static_cast<double>(sims.size());
  for (std::size_t i = 0; i < sims.size(); ++i) {
    const PlanResult& r = *sims[i];
    double parts[] = {r.compute, r.exposed[0], r.exposed[1], r.exposed[2], r.exposed[3], r.exposed[4], r.idle};
    double at = bx, yy = top + 5 + bar * static_cast<double>(i);
    for (std::size_t k = 0; k < 7; ++k) {
      double len = parts[k] / std::max(longest, 1e-12) * (w - 20);
      out += fmt::format(R"(<rect x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" fill="{}"><title>#{} {}: {} {:.3f} s</title></rect>)" "\n",
                         at, yy, len, bar * 0.8, colours[k], i + 1, xml_escape(r.layout), names[k], parts[k]);
      at += len;
    }
  }
  for (std::size_t k = 0; k < 7; ++k)
    out += fmt::format(R"(<rect x="{:.0f}" y="{:.0f}" width="12" height="12" fill="{}"/><text x="{:.0f}" y="{:.0f}">{}</text>)" "\n",
                       bx + 70 * static_cast<double>(k), top + h + 10, colours[k], bx + 70 * static_cast<double>(k) + 16, top + h + 20, names[k]);
  out += fmt::format(R"(<text x="{}" y="{}">step time of the best {} simulated layouts (longest {:.3f} s)</text>)" "\n", bx, top + h + 45,
                     sims.size(), longest);
  return out + "</svg>\n";
}

std::string infeasible_explanation(const PlanOutcome& o) {
  std::string out = fmt::format("no layout qualifies: {} searched, all rejected\n", o.evaluated);
  for (const auto& [reason, r] : o.rejected) out += fmt::format("  {:>9} {:<16} e.g. {}\n", r.count, reason.key(), r.example);
  if (!o.near_misses.empty()) {
    out += "nearest misses (memory):\n";
    for (const PlanResult& r : o.near_misses)
      out += fmt::format("  {} on {} {}: {:.1f} GiB of {:.1f} GiB ({:+.0f}%)\n", r.layout, r.gpus, r.gpu, gib(r.peak_bytes),
                         gib(r.capacity_bytes), 100 * (r.peak_bytes / r.capacity_bytes - 1));
  }
  return out;
}

std::string megatron_flags(const Job& job) {
  const ParallelLayout& l = job.layout;
  std::string out = fmt::format("--tensor-model-parallel-size {} --pipeline-model-parallel-size {}", l.tp, l.pp);
  if (l.cp > 1)
    out += fmt::format(" --context-parallel-size {} --cp-comm-type {}", l.cp,
                       l.cp_comm == CpComm::all_to_all ? "a2a" : l.cp_comm == CpComm::all_gather ? "allgather" : "p2p");
  if (job.model.moe) out += fmt::format(" --expert-model-parallel-size {} --expert-tensor-parallel-size {}", l.ep, l.etp);
  if (schedule_family(l.schedule).interleaves)
    out += fmt::format(" --num-layers-per-virtual-pipeline-stage {}", job.model.layers / (l.pp * l.vp));
  out += fmt::format(" --micro-batch-size {} --global-batch-size {} --seq-length {}", l.micro_batch, job.training.global_batch,
                     job.training.seq_len);
  if (l.sequence_parallel) out += " --sequence-parallel";
  const Recompute& rc = l.recompute;
  if (rc.full) {
    out += " --recompute-granularity full --recompute-method uniform --recompute-num-layers 1";
  } else if (rc.core_attention || rc.norms || rc.mla_up_proj || rc.activation) {
    out += " --recompute-granularity selective --recompute-modules";
    if (rc.core_attention) out += " core_attn";
    if (rc.norms) out += " layernorm";
    if (rc.mla_up_proj) out += " mla_up_proj";
    if (rc.activation) out += " moe_act";
  }
  if (l.zero == 1) out += " --use-distributed-optimizer";
  // HSDP: that many copies of the distributed optimizer over the data-parallel ranks (NVIDIA/Megatron-LM
  // megatron/training/arguments.py, --num-distributed-optimizer-instances).
  if (l.zero == 1 && l.dp_replicas() > 1) out += fmt::format(" --num-distributed-optimizer-instances {}", l.dp_replicas());
  if (l.zero >= 2)
    out += fmt::format(" --use-custom-fsdp --data-parallel-sharding-strategy {}", l.zero == 2 ? "optim_grads" : "optim_grads_params");
  switch (job.training.precision) {
    case Precision::bf16: out += " --bf16"; break;
    case Precision::fp16: out += " --fp16"; break;
    case Precision::fp8: out += " --bf16 --fp8-format hybrid"; break;
  }
  out += "\n";
  if (l.schedule != ScheduleKind::one_f_one_b && l.schedule != ScheduleKind::interleaved)
    out += fmt::format("# Megatron-LM has no {} schedule: these flags run its 1F1B with the same layout\n", schedule_name(l.schedule));
  if (l.split != PipelineSplit::even)
    out += "# uneven stages: add --decoder-first-pipeline-num-layers / --decoder-last-pipeline-num-layers as plumb split them\n";
  if (l.zero >= 2 && l.dp_replicas() > 1)
    out += fmt::format("# HSDP shard groups of {} ({} replicas): these flags shard over every data-parallel rank\n", l.dp_shard_size(), l.dp_replicas());
  return out;
}

std::string torchtitan_toml(const Job& job) {
  const ParallelLayout& l = job.layout;
  std::string notes;
  const std::int64_t per_rank = job.training.global_batch / l.dp;  // sequences per data-parallel rank per step
  std::string out = "# torchtitan settings of the layout (TOML, torchtitan's train_configs of 2025): merge into the job's config\n";
  out += fmt::format("[training]\nlocal_batch_size = {}\nglobal_batch_size = {}\nseq_len = {}\n", l.pp > 1 ? per_rank : l.micro_batch,
                     job.training.global_batch, job.training.seq_len);
  // ZeRO-3 is FSDP (sharding); no sharding is replication; torchtitan has no ZeRO-1 or 2.
  const bool shard = l.zero >= 1;
  if (l.zero == 1 || l.zero == 2) notes += fmt::format("# torchtitan has no ZeRO-{}: FSDP (ZeRO-3) shards more than the layout plumb priced\n", l.zero);
  out += fmt::format("\n[parallelism]\ndata_parallel_replicate_degree = {}\ndata_parallel_shard_degree = {}\n", shard ? l.dp_replicas() : l.dp,
                     shard ? l.dp_shard_size() : 1);
  out += fmt::format("tensor_parallel_degree = {}\npipeline_parallel_degree = {}\ncontext_parallel_degree = {}\n", l.tp, l.pp, l.cp);
  if (job.model.moe) out += fmt::format("expert_parallel_degree = {}\n", l.ep);
  if (l.cp > 1) {
    // PyTorch's rotation: all-gather (its default) or the ring of all-to-all sends; no head-splitting all-to-all.
    out += fmt::format("context_parallel_rotate_method = \"{}\"\n", l.cp_comm == CpComm::ring ? "alltoall" : "allgather");
    if (l.cp_comm == CpComm::all_to_all) notes += "# torchtitan has no all-to-all (head-splitting) context parallelism: its all-gather rotation instead\n";
  }
  if (l.pp > 1) {
    static const std::map<ScheduleKind, std::string> names = {{ScheduleKind::gpipe, "GPipe"},
                                                              {ScheduleKind::one_f_one_b, "1F1B"},
                                                              {ScheduleKind::interleaved, "Interleaved1F1B"},
                                                              {ScheduleKind::zb_v, "ZBVZeroBubble"}};
    auto name = names.find(l.schedule);
    out += fmt::format("pipeline_parallel_schedule = \"{}\"\npipeline_parallel_microbatch_size = {}\n", name != names.end() ? name->second : "1F1B",
                       l.micro_batch);
    if (name == names.end()) notes += fmt::format("# torchtitan has no {} schedule: 1F1B with the same layout\n", schedule_name(l.schedule));
    if (l.schedule == ScheduleKind::interleaved && l.vp != 2)
      notes += fmt::format("# {} virtual stages per rank: set pipeline_parallel_layers_per_stage to {}\n", l.vp, job.model.layers / (l.pp * l.vp));
  }
  if (!l.reshard_after_forward) out += "fsdp_reshard_after_forward = \"never\"\n";
  const Recompute& rc = l.recompute;
  out += "\n[activation_checkpoint]\n";
  if (rc.full) out += "mode = \"full\"\n";
  else if (rc.alternate_matmuls || rc.matmuls) out += "mode = \"selective\"\nselective_ac_option = \"op\"\n";
  else out += "mode = \"none\"\n";
  // Under per-op SAC torchtitan reruns every op outside its save list (norms, activations among them), so
  // only a selective list without matmuls lacks a torchtitan setting.
  if (!rc.full && !rc.alternate_matmuls && !rc.matmuls && (rc.core_attention || rc.norms || rc.mla_up_proj || rc.activation))
    notes += fmt::format("# torchtitan has no {} recomputation: none is set\n", rc.label);
  if (job.training.precision == Precision::fp8) out += "\n[model]\nconverters = [\"float8\"]\n";
  if (job.training.precision == Precision::fp16) notes += "# torchtitan trains in bf16 (mixed_precision_param), not fp16\n";
  return out + notes;
}

Json partial_json(const std::string& scenario, const PlanOutcome& o, std::uint64_t shard, std::uint64_t shards, std::uint64_t space_size) {
  Json rejected = Json::object();
  for (const auto& [reason, r] : o.rejected)
    rejected[std::string(reason.key())] = {{"count", r.count}, {"example", r.example}, {"example_index", r.example_index}};
  Json ranked = Json::array(), misses = Json::array();
  for (const PlanResult& r : o.ranked) ranked.push_back(result_json(r));
  for (const PlanResult& r : o.near_misses) misses.push_back(result_json(r));
  return {{"plumb_plan_shard", {{"shard", shard}, {"shards", shards}, {"space_size", space_size}, {"scenario", scenario}}},
          {"evaluated", o.evaluated},
          {"feasible", o.feasible},
          {"seconds", o.seconds},
          {"rejected", rejected},
          {"ranked", ranked},
          {"near_misses", misses}};
}

PlanOutcome read_partial(const Json& doc, const std::string& file, std::uint64_t space_size) {
  auto fail = [&](const std::string& pointer, const std::string& message) {
    throw InputError({Diagnostic{file, pointer, message}});
  };
  if (!doc.is_object() || !doc.contains("plumb_plan_shard")) fail("", "not a plumb plan shard (written by plumb plan --shard i/N --out FILE)");
  try {
    if (doc.at("plumb_plan_shard").at("space_size").get<std::uint64_t>() != space_size)
      fail("/plumb_plan_shard/space_size", "written for another plan space (a different scenario or plan section)");
    PlanOutcome o;
    o.evaluated = doc.at("evaluated").get<std::uint64_t>();
    o.feasible = doc.at("feasible").get<std::uint64_t>();
    o.seconds = doc.at("seconds").get<double>();
    for (const auto& [reason, r] : doc.at("rejected").items())
      o.rejected[RejectionReason::from_key(reason)] = {r.at("count").get<std::uint64_t>(), r.at("example").get<std::string>(), r.at("example_index").get<std::uint64_t>()};
    for (const Json& r : doc.at("ranked")) o.ranked.push_back(result_from(r));
    for (const Json& r : doc.at("near_misses")) o.near_misses.push_back(result_from(r));
    return o;
  } catch (const Json::exception& e) {
    fail("", fmt::format("malformed shard: {}", e.what()));
  }
  return {};
}

}  // namespace plumb
