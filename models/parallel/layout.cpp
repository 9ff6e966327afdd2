#include "models/parallel/layout.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <numeric>

#include "models/hardware/hardware.hpp"
#include "models/spec/model_spec.hpp"
#include "models/spec/training.hpp"

namespace plumb {
namespace {

constexpr std::int64_t kMaxParallel = 1'048'576;

}  // namespace

Recompute read_recompute(const Json& value, const std::string& pointer, const SourceFile& src) {
  Recompute rc;
  const Json* v = &value;
  auto apply = [&](const std::string& word, const std::string& at) {
    if (word == "none") return;
    if (word == "full") rc.full = true;
    else if (word == "selective" || word == "core_attention") rc.core_attention = true;
    else if (word == "norm") rc.norms = true;
    else if (word == "mla_up_proj") rc.mla_up_proj = true;
    else if (word == "activation") rc.activation = true;
    else if (word == "alternate_matmuls") rc.alternate_matmuls = rc.norms = rc.activation = true;
    else if (word == "matmuls") rc.matmuls = rc.norms = rc.activation = true;
    else {
      std::vector<std::string> words{"none",        "selective", "full",       "core_attention",   "norm",
                                     "mla_up_proj", "activation", "matmuls", "alternate_matmuls"};
      std::string hint = nearest_word(word, words);
      src.error(at, fmt::format("\"{}\" is not a recomputation: use \"none\", \"selective\", \"full\" or a list of "
                                       "\"core_attention\", \"norm\", \"mla_up_proj\", \"activation\", \"matmuls\", \"alternate_matmuls\"{}",
                                       word, hint.empty() ? "" : fmt::format("; did you mean \"{}\"?", hint)));
    }
  };
  if (v->is_string()) {
    apply(v->get<std::string>(), pointer);
    rc.label = v->get<std::string>();
  } else if (v->is_array()) {
    std::vector<std::string> words;
    for (std::size_t i = 0; i < v->size(); ++i) {
      std::string at = json_pointer_append(pointer, std::to_string(i));
      if (!(*v)[i].is_string()) {
        src.error(at, fmt::format("expected a recomputation name, found {}", json_brief((*v)[i])));
        continue;
      }
      apply((*v)[i].get<std::string>(), at);
      words.push_back((*v)[i].get<std::string>());
    }
    rc.label = words.empty() ? "none" : fmt::format("{}", fmt::join(words, "+"));
  } else {
    src.error(pointer, fmt::format("expected \"none\", \"selective\", \"full\" or a list, found {}", json_brief(*v)));
  }
  return rc;
}

namespace {

Recompute read_recompute(ObjectReader& r) {
  const Json* v = r.child("recompute", Need::optional);
  return v ? read_recompute(*v, r.pointer("recompute"), r.source()) : Recompute{};
}

std::vector<std::string> read_order(ObjectReader& r) {
  std::vector<std::string> order{"tp", "cp", "ep", "dp", "pp"};
  auto text = r.string("order", Need::optional);
  if (!text) return order;
  std::vector<std::string> parsed;
  std::size_t start = 0;
  while (start <= text->size()) {
    std::size_t dash = text->find('-', start);
    parsed.push_back(text->substr(start, dash == std::string::npos ? std::string::npos : dash - start));
    if (dash == std::string::npos) break;
    start = dash + 1;
  }
  std::vector<std::string> sorted = parsed, expected = order;
  std::sort(sorted.begin(), sorted.end());
  std::sort(expected.begin(), expected.end());
  if (sorted != expected) {
    r.error("order", fmt::format("\"{}\" must name each of tp, cp, ep, dp, pp once, innermost first, "
                                 "e.g. \"tp-cp-ep-dp-pp\"", *text));
    return order;
  }
  return parsed;
}

}  // namespace

std::string data_parallel_label(const ParallelLayout& p) {
  return p.dp_replicas() > 1 ? fmt::format("DP{} (HSDP {}×{})", p.dp, p.dp_shard_size(), p.dp_replicas()) : fmt::format("DP{}", p.dp);
}

ParallelLayout read_parallel(ObjectReader& r) {
  ParallelLayout p;
  auto size = [&](const char* key) { return r.integer(key, Need::optional, 1, kMaxParallel).value_or(1); };
  p.tp = size("tp");
  p.pp = size("pp");
  p.dp = size("dp");
  p.cp = size("cp");
  p.ep = size("ep");
  p.etp = size("etp");
  p.vp = size("vp");
  p.zero = static_cast<int>(r.integer("zero", Need::optional, 0, 3).value_or(0));
  p.dp_shard = r.integer("dp_shard", Need::optional, 1, 1'000'000).value_or(0);
  p.schedule = r.choice<ScheduleKind>("schedule", Need::optional, schedule_names()).value_or(ScheduleKind::one_f_one_b);
  p.micro_batch = r.integer("micro_batch", Need::optional, 1, 1'000'000).value_or(1);
  p.recompute = read_recompute(r);
  p.sequence_parallel = r.boolean("sequence_parallel", Need::optional).value_or(p.tp > 1);
  p.sequence_parallel_copies = r.boolean("sequence_parallel_copies", Need::optional).value_or(false);
  p.fp8_all_gathers = r.boolean("fp8_all_gathers", Need::optional).value_or(false);
  p.fp8_weight_gathers = r.boolean("fp8_weight_gathers", Need::optional).value_or(false);
  p.comm_sms = static_cast<std::int32_t>(r.integer("comm_sms", Need::optional, 1, 1024).value_or(20));
  p.overlap_p2p = r.boolean("overlap_p2p", Need::optional).value_or(true);
  p.tp_backward_overlap = r.boolean("tp_backward_overlap", Need::optional).value_or(false);
  p.overlap_grad_reduce = r.boolean("overlap_grad_reduce", Need::optional).value_or(true);
  p.reshard_after_forward = r.boolean("reshard_after_forward", Need::optional).value_or(true);
  r.retired("fsdp_root_gathered", "write \"fsdp_outer_units\": \"root\" for true, \"none\" for false (or \"split\" for "
                                  "torchtitan's units from July 2025 on)");
  p.fsdp_outer_units = r.choice<FsdpOuterUnits>("fsdp_outer_units", Need::optional,
                                                {{"none", FsdpOuterUnits::none}, {"root", FsdpOuterUnits::root}, {"split", FsdpOuterUnits::split}})
                           .value_or(FsdpOuterUnits::none);
  p.keep_gathered_inputs = r.boolean("keep_gathered_inputs", Need::optional).value_or(false);
  p.pipeline_keeps_outputs = r.boolean("pipeline_keeps_outputs", Need::optional).value_or(false);
  if (const Json* merge = r.child("cp_merge", Need::optional)) {
    if (!merge->is_object()) {
      r.error("cp_merge", "expected {\"forward\": bytes, \"backward\": bytes, \"repeated_kv\": true|false}");
    } else {
      ObjectReader m(*merge, r.pointer("cp_merge"), r.source());
      p.cp_merge.forward = m.number("forward", Need::required, 0.0, 1000.0).value_or(0.0);
      p.cp_merge.backward = m.number("backward", Need::required, 0.0, 1000.0).value_or(0.0);
      p.cp_merge.repeated_kv = m.boolean("repeated_kv", Need::optional).value_or(false);
      m.finish();
    }
  }
  p.moe_execution = r.choice<MoeExecution>("moe_execution", Need::optional, {{"separate", MoeExecution::separate}, {"waves", MoeExecution::waves}})
                        .value_or(MoeExecution::separate);
  p.tp_overlap = r.choice<TpOverlap>("tp_overlap", Need::optional, {{"none", TpOverlap::none}, {"async", TpOverlap::async}})
                     .value_or(TpOverlap::none);
  p.cp_comm = r.choice<CpComm>("cp_comm", Need::optional, cp_comm_words()).value_or(CpComm::ring);
  p.order = read_order(r);
  p.split = r.choice<PipelineSplit>("split", Need::optional, {{"even", PipelineSplit::even}, {"balanced", PipelineSplit::balanced}})
                .value_or(PipelineSplit::even);
  if (const Json* list = r.child("stage_layers", Need::optional)) {
    if (r.has("split")) r.error("stage_layers", "give either \"split\" or \"stage_layers\", not both");
    p.split = PipelineSplit::explicit_list;
    if (!list->is_array() || list->empty()) {
      r.error("stage_layers", "expected a list of layer counts, one per pipeline stage, e.g. [4, 4, 4, 3]");
    } else {
      for (std::size_t i = 0; i < list->size(); ++i) {
        const Json& n = (*list)[i];
        if (!n.is_number_integer() || n.get<std::int64_t>() < 0) {
          r.source().error(json_pointer_append(r.pointer("stage_layers"), std::to_string(i)),
                           fmt::format("expected a layer count ≥ 0, found {}", json_brief(n)));
          continue;
        }
        p.stage_layers.push_back(n.get<std::int64_t>());
      }
    }
  }
  return p;
}

std::int64_t microbatches(const ParallelLayout& layout, const TrainingSpec& training) {
  return training.global_batch / (layout.micro_batch * layout.dp);
}

std::vector<std::int64_t> balanced_split(std::int64_t layers, std::int64_t mtp_depth, std::int64_t stages) {
  if (stages == 1) return {layers};
  std::int64_t slots = layers + 2 + mtp_depth;
  std::int64_t base = slots / stages, extra = slots % stages;
  std::vector<std::int64_t> split(static_cast<std::size_t>(stages), base);
  // Extra slots go to the middle stages, which carry neither the embedding nor the head.
  for (std::int64_t i = 0; i < extra; ++i) split[static_cast<std::size_t>(1 + i % std::max<std::int64_t>(1, stages - 2))] += 1;
  split.front() -= 1;
  split.back() -= 1 + mtp_depth;
  if (std::any_of(split.begin(), split.end(), [](std::int64_t n) { return n < 0; })) return {};
  return split;
}

const std::vector<std::pair<std::string, CpComm>>& cp_comm_words() {
  static const std::vector<std::pair<std::string, CpComm>> words{
      {"ring", CpComm::ring}, {"a2a", CpComm::all_to_all}, {"all_gather", CpComm::all_gather}};
  return words;
}

std::string_view cp_comm_name(CpComm c) {
  for (const auto& [word, comm] : cp_comm_words())
    if (comm == c) return word;
  return "?";
}

void finalize_layout(ParallelLayout& p, const ModelSpec& model, const Cluster& cluster, const TrainingSpec& training,
                     const SourceFile& src) {
  auto error = [&](const char* pointer, std::string message) { src.error(pointer, std::move(message)); };
  if (p.gpus() != cluster.gpus())
    error("/parallel", fmt::format("tp {} × cp {} × pp {} × dp {} = {} GPUs, but the cluster has {} nodes × {} = {} GPUs",
                                   p.tp, p.cp, p.pp, p.dp, p.gpus(), cluster.nodes, cluster.fabric.gpus_per_node,
                                   cluster.gpus()));
  // Tensor parallelism splits heads and hidden widths.
  const AttentionSpec& a = model.attention;
  if (a.heads % p.tp != 0) error("/parallel/tp", fmt::format("tp {} does not divide the {} attention heads", p.tp, a.heads));
  else if (a.kind == AttentionKind::gqa && a.kv_heads % p.tp != 0)
    error("/parallel/tp", fmt::format("tp {} does not divide the {} key/value heads", p.tp, a.kv_heads));
  if (!model.moe || model.moe->first_dense_layers > 0) {
    if (model.mlp.ffn_hidden % p.tp != 0)
      error("/parallel/tp", fmt::format("tp {} does not divide the MLP width {}", p.tp, model.mlp.ffn_hidden));
  }
  if (p.fp8_all_gathers && training.precision != Precision::fp8)
    error("/parallel/fp8_all_gathers", fmt::format("fp8 all-gathers need \"training.precision\": \"fp8\", not \"{}\"",
                                                   precision_name(training.precision)));
  if (p.fp8_all_gathers && !p.sequence_parallel)
    error("/parallel/fp8_all_gathers", "fp8 all-gathers are sequence parallelism's: set \"sequence_parallel\": true or remove it");
  if (p.dp_shard > 0) {
    if (p.dp % p.dp_shard != 0)
      error("/parallel/dp_shard", fmt::format("dp_shard {} does not divide dp {}: give a divisor of dp (shard groups of that many "
                                              "data-parallel ranks, replicated dp / dp_shard times)", p.dp_shard, p.dp));
    else if (p.zero < 1 && p.dp_shard < p.dp)
      error("/parallel/dp_shard", "dp_shard shards ZeRO's states within groups of data-parallel ranks; with ZeRO-0 nothing is "
                                  "sharded: set \"zero\" or remove it");
  }
  if (p.fp8_weight_gathers) {
    if (training.precision != Precision::fp8 || training.fp8_recipe != Fp8Recipe::tensorwise)
      error("/parallel/fp8_weight_gathers",
            "fp8 weight gathers are torchao's tensorwise float8 (enable_fsdp_float8_all_gather): set \"training.precision\": "
            "\"fp8\" with \"fp8_recipe\": \"tensorwise\", or remove it");
    else if (p.zero < 3)
      error("/parallel/fp8_weight_gathers", fmt::format("fp8 weight gathers are ZeRO-3's (FSDP's) weight all-gathers; this "
                                                        "layout has ZeRO-{}: set \"zero\": 3 or remove it", p.zero));
  }
  // Async TP is a pass of Inductor's over sequence-parallel collectives, through NVLink symmetric memory.
  if (p.tp_overlap == TpOverlap::async) {
    if (p.tp < 2) error("/parallel/tp_overlap", "\"async\" overlaps tensor parallelism's collectives; with tp 1 there are none: remove it");
    else if (!p.sequence_parallel)
      error("/parallel/tp_overlap", "\"async\" fuses sequence parallelism's all-gathers and reduce-scatters with the GEMMs: set "
                                    "\"sequence_parallel\": true or remove it");
    else if (p.tp > cluster.fabric.gpus_per_node)
      error("/parallel/tp_overlap", fmt::format("\"async\" copies between GPUs through NVLink symmetric memory, so tp {} must fit in "
                                                "one node of {} GPUs; lower tp or remove it", p.tp, cluster.fabric.gpus_per_node));
    if (!training.compiled)
      error("/parallel/tp_overlap", "\"async\" is a torch.compile pass (Inductor's micro-pipeline TP): set \"training.compile\": "
                                    "true or remove it");
  }
  // torchtitan's per-op policy counts a Llama block's matmuls: MHA/GQA attention and a dense SwiGLU MLP.
  if ((p.recompute.alternate_matmuls || p.recompute.matmuls) &&
      (a.kind == AttentionKind::mla || model.moe || model.mlp.kind != MlpKind::swiglu))
    error("/parallel/recompute", fmt::format("\"{}\" follows torchtitan's per-op policy for Llama blocks (wq, wk, wv, wo, w1, "
                                             "w3, w2), which {} does not have (MLA attention, MoE or a GeLU MLP)",
                                             p.recompute.alternate_matmuls ? "alternate_matmuls" : "matmuls", model.name));
  // Experts fold over the same GPUs as the dense layers: ep × etp × edp = tp × cp × dp.
  if (model.moe) {
    if (model.moe->experts % p.ep != 0)
      error("/parallel/ep", fmt::format("ep {} does not divide the {} routed experts", p.ep, model.moe->experts));
    if ((p.tp * p.cp * p.dp) % (p.ep * p.etp) != 0)
      error("/parallel/ep", fmt::format("ep {} × etp {} = {} does not divide tp {} × cp {} × dp {} = {}", p.ep, p.etp,
                                        p.ep * p.etp, p.tp, p.cp, p.dp, p.tp * p.cp * p.dp));
    if (model.moe->expert_ffn_hidden % p.etp != 0)
      error("/parallel/etp", fmt::format("etp {} does not divide the expert width {}", p.etp, model.moe->expert_ffn_hidden));
    // DeepGEMM's MegaMoE pulls tokens from and writes results into the other ranks' buffers through
    // symmetric memory over NVLink (deepseek-ai/DeepGEMM, csrc/apis/mega.hpp): the EP group is one node.
    if (p.moe_execution == MoeExecution::waves && p.tp * p.cp * p.ep > cluster.fabric.gpus_per_node)
      error("/parallel/moe_execution",
            fmt::format("\"waves\" runs the EP group through NVLink symmetric memory, so tp {} × cp {} × ep {} = {} must fit in one "
                        "node of {} GPUs; lower ep or use \"separate\"",
                        p.tp, p.cp, p.ep, p.tp * p.cp * p.ep, cluster.fabric.gpus_per_node));
  } else {
    if (p.moe_execution == MoeExecution::waves)
      error("/parallel/moe_execution", fmt::format("\"waves\" runs MoE layers; {} has no experts", model.name));
    if (p.ep != 1) error("/parallel/ep", fmt::format("ep {} needs an MoE model; {} has no experts", p.ep, model.name));
    if (p.etp != 1) error("/parallel/etp", fmt::format("etp {} needs an MoE model; {} has no experts", p.etp, model.name));
  }
  // All-to-all CP gives each rank heads/cp of the heads (TE checks both divide: context_parallel.py).
  if (p.cp > 1 && p.cp_comm != CpComm::ring && a.kind == AttentionKind::compressed)
    error("/parallel/cp_comm", "compressed attention exchanges its own way under context parallelism (its boundary entries and the "
                               "compressed KV): use \"ring\"");
  else if (p.cp > 1 && p.cp_comm == CpComm::all_to_all) {
    if (a.heads % (p.tp * p.cp) != 0 || (a.kind == AttentionKind::gqa && a.kv_heads % (p.tp * p.cp) != 0))
      error("/parallel/cp_comm", fmt::format("\"a2a\" gives each rank heads/cp of the heads: tp {} × cp {} = {} must divide the {} attention "
                                             "heads{}; use \"ring\" or a smaller cp",
                                             p.tp, p.cp, p.tp * p.cp, a.heads,
                                             a.kind == AttentionKind::gqa ? fmt::format(" and the {} key/value heads", a.kv_heads) : ""));
  }
  // Sequence sharding: Megatron splits each sequence into 2·cp chunks for causal load balance.
  if (p.cp > 1 && training.seq_len % (2 * p.cp) != 0)
    error("/training/seq_len", fmt::format("seq_len {} is not a multiple of 2·cp = {} (context parallelism splits each "
                                           "sequence into 2·cp chunks)", training.seq_len, 2 * p.cp));
  if (p.comm_sms >= cluster.gpu.sms)
    error("/parallel/comm_sms", fmt::format("communication kernels cannot hold {} SMs of the {} the GPU has; give fewer", p.comm_sms,
                                            cluster.gpu.sms));
  if (p.sequence_parallel && (training.seq_len / p.cp) % p.tp != 0)
    error("/parallel/sequence_parallel", fmt::format("sequence parallelism needs seq_len / cp = {} to be a multiple of tp {}",
                                                     training.seq_len / p.cp, p.tp));
  if (model.position == PositionKind::learned && training.seq_len > model.max_seq)
    error("/training/seq_len", fmt::format("seq_len {} exceeds the {} learned positions of {}", training.seq_len,
                                           model.max_seq, model.name));
  // Batch: every DP replica runs the same whole number of micro-batches.
  if (training.global_batch % (p.micro_batch * p.dp) != 0) {
    error("/training/global_batch", fmt::format("{} sequences are not a multiple of micro_batch {} × dp {} = {}",
                                                training.global_batch, p.micro_batch, p.dp, p.micro_batch * p.dp));
  } else {
    for (const ScheduleViolation& v : schedule_constraint_violations(p.schedule, {.ranks = p.pp, .microbatches = microbatches(p, training), .vp = p.vp})) {
      std::string why = v.field != "micro_batch" ? "" : fmt::format(" (m = global_batch {} / (micro_batch {} × dp {}))",
                                                                   training.global_batch, p.micro_batch, p.dp);
      src.error("/parallel/" + v.field, v.message + why);
    }
  }
  // Layers over stages.
  std::int64_t stages = p.stages();
  switch (p.split) {
    case PipelineSplit::even:
      if (model.layers % stages != 0)
        error("/parallel/pp", fmt::format("{} pipeline stages ({} with {}) do not divide {} layers; set \"split\": "
                                          "\"balanced\" or give \"stage_layers\"", stages, schedule_name(p.schedule),
                                          p.pp == stages ? fmt::format("pp {}", p.pp) : fmt::format("pp {}, vp {}", p.pp, p.vp),
                                          model.layers));
      else p.stage_layers.assign(static_cast<std::size_t>(stages), model.layers / stages);
      break;
    case PipelineSplit::balanced:
      p.stage_layers = balanced_split(model.layers, model.mtp_depth, stages);
      if (p.stage_layers.empty())
        error("/parallel/split", fmt::format("{} layers with embedding, head and {} MTP module(s) are too few for {} stages",
                                             model.layers, model.mtp_depth, stages));
      break;
    case PipelineSplit::explicit_list: {
      std::int64_t sum = std::accumulate(p.stage_layers.begin(), p.stage_layers.end(), std::int64_t{0});
      if (static_cast<std::int64_t>(p.stage_layers.size()) != stages || sum != model.layers)
        error("/parallel/stage_layers", fmt::format("expected {} stage counts summing to {} layers, got {} summing to {}",
                                                    stages, model.layers, p.stage_layers.size(), sum));
      break;
    }
  }
}

}  // namespace plumb
