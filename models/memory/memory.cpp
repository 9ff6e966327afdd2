#include "models/memory/memory.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <utility>

#include "models/memory/activations.hpp"
#include "models/optimizer/muon.hpp"
#include "models/schedules/held_bytes.hpp"
#include "models/schedules/registry.hpp"
#include "models/spec/param_count.hpp"

namespace plumb {

double accumulated_grad_bytes(double reduce_bytes, std::int64_t microbatches) {
  return microbatches > 1 ? std::max(2.0, reduce_bytes) : 2.0;
}

ModelStateBytes model_state_bytes(double params, int zero, std::int64_t shards, double weight_bytes,
                                  const OptimizerBytes& optimizer, bool resharded, std::int64_t microbatches, double fp8_gathered) {
  double n = static_cast<double>(shards);
  ModelStateBytes b;
  const bool gathered = zero >= 3 && !resharded;
  // Under ZeRO-3 with the shard as the master (OptimizerBytes::params_are_master) the master is counted once,
  // as the parameters, and kept gathered the 16-bit copy stays beside it.
  const bool shard_is_master = zero >= 3 && optimizer.params_are_master;
  const double whole = params * weight_bytes - fp8_gathered * (weight_bytes - 1.0);
  b.params = shard_is_master ? params * optimizer.master / n + (gathered ? whole : 0.0)
                             : (gathered ? whole : params * weight_bytes / (zero >= 3 ? n : 1.0));
  b.grads = params * optimizer.grads / (zero >= 2 ? n : 1.0) +
            (gathered ? params * accumulated_grad_bytes(optimizer.grads, microbatches) : 0.0);
  b.optimizer = params * (shard_is_master ? optimizer.moments : optimizer.states()) / (zero >= 1 ? n : 1.0);
  return b;
}

namespace {

// One rank's share of a layer: layers of one kind (models/spec LayerKind) are alike, so each kind is
// costed once per plan rather than once per layer.
struct LayerShare {
  double dense_params = 0;   // after TP sharding
  double expert_params = 0;  // after EP/ETP sharding
  double fp8_gathered = 0;   // of dense_params: the linears' weights ZeRO-3 gathers in fp8 (ParallelLayout::fp8_weight_gathers)
  double bytes_per_token = 0;
  double recomputed_bytes_per_token = 0;  // what recomputation drops and the layer's backward rebuilds
  double weight_stash_bytes_per_token = 0;  // what its W reads, from its input-gradient backward on
};

struct ModelShare {
  ParamCounts counts;
  std::map<LayerKind, LayerShare> kinds;  // one per kind of layer the model has (and its MTP layer)
  double embedding_bytes_per_token = 0, head_bytes_per_token = 0, mtp_extra_bytes_per_token = 0;
  double tokens = 0;  // per micro-batch on one rank

  const LayerShare& layer(const ModelSpec& m, std::int64_t l) const { return kinds.at(m.layer_kind(l)); }
};

LayerShare layer_share(const Job& job, std::int64_t layer, const ActivationSettings& settings) {
  const ParallelLayout& p = job.layout;
  LayerParams lp = layer_params(job.model, layer);
  LayerShare share;
  share.dense_params = (lp.attention_sharded + lp.mlp_sharded) / static_cast<double>(p.tp) + lp.attention_replicated +
                       lp.mlp_replicated + lp.norms + lp.router + lp.mixing;
  share.expert_params = lp.expert / static_cast<double>(p.etp) * static_cast<double>(lp.routed_experts / p.ep);
  // torchao converts the attention's and the MLP's linears; norms, router and mixing weights stay as they are.
  if (p.fp8_weight_gathers)
    share.fp8_gathered = (lp.attention_sharded + lp.mlp_sharded) / static_cast<double>(p.tp) + lp.attention_replicated + lp.mlp_replicated;
  share.bytes_per_token = layer_bytes_per_token(job.model, layer, settings);
  ActivationSettings kept = settings;
  kept.recompute = Recompute{};
  share.recomputed_bytes_per_token = layer_bytes_per_token(job.model, layer, kept) - share.bytes_per_token;
  share.weight_stash_bytes_per_token = bytes_per_token(weight_gradient_tensors(job.model, layer, settings), settings);
  return share;
}

ModelShare model_share(const Job& job) {
  const ModelSpec& m = job.model;
  ActivationSettings settings = ActivationSettings::of(job.layout, job.training);
  ModelShare share;
  share.counts = count_params(m);
  // Every dense layer is alike, and so is every MoE layer — unless their attention or routing differs.
  for (std::int64_t l = 0; l <= m.mtp_layer(); ++l)
    if (!share.kinds.contains(m.layer_kind(l))) share.kinds.emplace(m.layer_kind(l), layer_share(job, l, settings));
  share.embedding_bytes_per_token = bytes_per_token(embedding_tensors(m), settings);
  share.head_bytes_per_token = bytes_per_token(head_tensors(m), settings);
  share.mtp_extra_bytes_per_token = bytes_per_token(mtp_extra_tensors(m), settings);
  share.tokens = static_cast<double>(job.layout.micro_batch * (job.training.seq_len / job.layout.cp));
  return share;
}

double activation_bytes(const ModelSpec& m, const ModelShare& share, const StagePlan& s) {
  double per_token = 0;
  for (std::int64_t l = s.first_layer; l < s.first_layer + s.layers; ++l) per_token += share.layer(m, l).bytes_per_token;
  if (s.embedding) per_token += share.embedding_bytes_per_token;
  if (s.head) per_token += share.head_bytes_per_token;
  // Each MTP module is one more block of the last layer's kind plus its own norms, projection and head.
  per_token += static_cast<double>(s.mtp_modules) *
               (share.layer(m, m.mtp_layer()).bytes_per_token + share.mtp_extra_bytes_per_token);
  return per_token * share.tokens;
}

// What one micro-batch's weight gradients of stage `s` read once its input-gradient backward is done,
// until its W (the layers'; the head's and embedding's W are not split off).
double weight_stash_bytes(const ModelSpec& m, const ModelShare& share, const StagePlan& s) {
  double per_token = 0;
  for (std::int64_t l = s.first_layer; l < s.first_layer + s.layers; ++l) per_token += share.layer(m, l).weight_stash_bytes_per_token;
  per_token += static_cast<double>(s.mtp_modules) * share.layer(m, m.mtp_layer()).weight_stash_bytes_per_token;
  return per_token * share.tokens;
}

// Per model stage: one micro-batch's activation set and, of it, its W's stash.
std::pair<std::vector<double>, std::vector<double>> stage_sets_and_stashes(const ModelSpec& m, const ModelShare& share,
                                                                           const std::vector<StagePlan>& stages) {
  std::vector<double> activation, stash;
  for (const StagePlan& s : stages) {
    activation.push_back(activation_bytes(m, share, s));
    stash.push_back(weight_stash_bytes(m, share, s));
  }
  return {activation, stash};
}

double stash_share(const std::vector<double>& activation, const std::vector<double>& stash) {
  double share = 0;
  for (std::size_t k = 0; k < activation.size(); ++k)
    if (activation[k] > 0) share = std::max(share, stash[k] / activation[k]);
  return share;
}

// Where the schedule runs weight gradients apart from their backward: what their stashes add to each
// rank's activation peak, walked over the schedule's order at equal op times (zeros for the other
// families, and for a shape no schedule has, which the layout's checks report).
std::vector<double> deferred_weight_grad_bytes(const Job& job, const MemoryPlan& plan, const ModelShare& share) {
  const ParallelLayout& p = job.layout;
  std::vector<double> out(static_cast<std::size_t>(p.pp), 0.0);
  if (!schedule_family(p.schedule).splits_backward) return out;
  const auto [activation, stash] = stage_sets_and_stashes(job.model, share, plan.stages);
  try {
    const auto order = equal_time_schedule(p.schedule, {.ranks = p.pp, .microbatches = plan.microbatches, .vp = p.vp},
                                           stash_share(activation, stash));
    for (std::int64_t r = 0; r < p.pp; ++r) out[static_cast<std::size_t>(r)] = stash_peak_increase(*order, r, activation, stash);
  } catch (const ScheduleError&) {
  }
  return out;
}

struct HeldParams {
  double dense = 0;
  double expert = 0;
  double largest_layer = 0;  // what ZeRO-3 gathers at once, after TP/EP sharding
  double largest_gathered_bytes = 0;  // the bytes of it that gather moves and holds (gathered_bytes)
  double fp8_gathered = 0;  // of `dense`: the weights gathered in fp8
  double largest_recomputed = 0;  // bytes per token the costliest held layer's backward rebuilds
  double outside_blocks = 0;      // of `dense`: the embedding, final norm and head, outside the blocks
  double embedding = 0, head = 0;  // of `outside_blocks`: the embedding's, and the final norm's with the head's
};

HeldParams params_of_stage(const Job& job, const ModelShare& share, const StagePlan& s, bool holds_first_stage) {
  const ModelSpec& m = job.model;
  double tp = static_cast<double>(job.layout.tp);
  double h = static_cast<double>(m.hidden);
  const ParamCounts& counts = share.counts;
  HeldParams held;
  auto add_layer = [&](const LayerShare& layer) {
    held.dense += layer.dense_params;
    held.expert += layer.expert_params;
    held.fp8_gathered += layer.fp8_gathered;
    held.largest_layer = std::max(held.largest_layer, layer.dense_params + layer.expert_params);
    held.largest_gathered_bytes =
        std::max(held.largest_gathered_bytes, gathered_bytes(layer.dense_params + layer.expert_params, layer.fp8_gathered));
    held.largest_recomputed = std::max(held.largest_recomputed, layer.recomputed_bytes_per_token);
  };
  for (std::int64_t l = s.first_layer; l < s.first_layer + s.layers; ++l) add_layer(share.layer(m, l));
  if (s.embedding) held.embedding = counts.embedding / tp + counts.position;
  // A tied head needs the embedding on the last stage too, unless the same rank already holds it.
  if (s.head) held.head = counts.final_norm + (m.tied_embeddings ? (holds_first_stage ? 0.0 : counts.embedding) : counts.head) / tp;
  held.outside_blocks = held.embedding + held.head;
  held.dense += held.outside_blocks;
  for (std::int64_t k = 0; k < s.mtp_modules; ++k) {
    add_layer(share.layer(m, m.mtp_layer()));
    held.dense += 2.0 * h * h / tp + (mtp_module_extra_params(m) - 2.0 * h * h);  // projection split over TP
  }
  return held;
}

}  // namespace

std::vector<StageParams> stage_params(const Job& job) {
  const ModelShare share = model_share(job);
  std::vector<StageParams> out;
  for (const StagePlan& s : stage_plans(job.layout, job.model.mtp_depth)) {
    HeldParams held = params_of_stage(job, share, s, s.embedding);
    out.push_back({held.dense, held.expert, held.fp8_gathered});
  }
  return out;
}

double stage_activation_bytes(const Job& job, const StagePlan& s) {
  return activation_bytes(job.model, model_share(job), s);
}

double stage_weight_stash_bytes(const Job& job, const StagePlan& s) {
  return weight_stash_bytes(job.model, model_share(job), s);
}

double weight_stash_share(const Job& job) {
  const auto [activation, stash] = stage_sets_and_stashes(job.model, model_share(job), stage_plans(job.layout, job.model.mtp_depth));
  return stash_share(activation, stash);
}

namespace {

// Which of the rank's held stages has the head, if any.
std::optional<std::size_t> head_slot(const MemoryPlan& plan, const RankMemory& rank) {
  for (std::size_t i = 0; i < rank.stages.size(); ++i)
    if (plan.stages[static_cast<std::size_t>(rank.stages[i])].head) return i;
  return std::nullopt;
}

// PyTorch's F.cross_entropy over an fp32 upcast of the bf16 logits (torchtitan's loss): its backward
// holds the saved fp32 log-softmax output, the fp32 gradient arriving from the loss and the one it
// passes on, 12 bytes per vocabulary entry and token (10 in the forward: the bf16 logits, their fp32
// copy and the log-softmax output), where a fused loss keeps the 4 of the fp32 logits that the
// activations already count. Under tensor parallelism torchtitan computes it vocabulary-parallel
// (train.py at 9dec370: loss parallelism on whenever TP is), through DTensor's decomposition
// (torch/distributed/tensor/parallel/loss.py): its backward, (zeros + exp(x)) · grad, holds the saved
// log-softmax output, the zeros, their sum with exp(x) and the product, 16 bytes. One micro-batch's
// worth, on the rank holding the head.
double loss_transient_bytes(const Job& job, const MemoryPlan& plan, const RankMemory& rank, double tokens) {
  if (job.training.fused_cross_entropy || !head_slot(plan, rank)) return 0.0;
  const ParallelLayout& p = job.layout;
  const double at_backward = p.tp > 1 ? 16.0 : 12.0;
  return (at_backward - 4.0) * static_cast<double>(job.model.vocab) / static_cast<double>(p.tp) * tokens;
}

// PyTorch's pipelining appends each forward's output to the stage's output_chunks, cleared only when the
// next step starts, and the last stage's output is the model's, the 16-bit logits (vocab-parallel under TP):
// every earlier micro-batch's are still held when the last one's loss is taken (pytorch/pytorch#159251;
// #138504 detached them from the graph in 2024-10 but kept them). The micro-batches in flight are counted
// with the activations.
double pipeline_outputs_bytes(const Job& job, const MemoryPlan& plan, const RankMemory& rank, double tokens) {
  const ParallelLayout& p = job.layout;
  const std::optional<std::size_t> head = head_slot(plan, rank);
  if (!p.pipeline_keeps_outputs || p.pp == 1 || !head) return 0.0;
  const double kept = std::max(0.0, static_cast<double>(plan.microbatches) - rank.inflight[*head]);
  return kept * tokens * static_cast<double>(job.model.vocab) / static_cast<double>(p.tp) * 2.0;
}

// Megatron-LM's CoreAttention (legacy model; 9290c730 megatron/model/transformer.py) computes a layer's
// scores as torch.baddbmm(buffer, q, kᵀ, beta=0) into a new [b·a/t, s, s] tensor, the buffer a preallocated
// one of the same shape (megatron/core/utils.py GlobalMemoryBuffer, kept for the run; a torch.empty of it
// before 2022): both are alive while the fused softmax and dropout make the probabilities the layer saves.
// One micro-batch's, on a rank that holds transformer layers.
double attention_scores_bytes(const Job& job, const MemoryPlan& plan, const RankMemory& rank, double tokens) {
  if (fused_attention(job.training.attention_kernel)) return 0.0;
  const bool holds_layers = std::any_of(rank.stages.begin(), rank.stages.end(), [&](std::int64_t s) {
    return plan.stages[static_cast<std::size_t>(s)].layers > 0;
  });
  if (!holds_layers) return 0.0;
  const double heads = static_cast<double>(job.model.attention.heads) / static_cast<double>(job.layout.tp);
  const double keys = static_cast<double>(job.training.seq_len / job.layout.cp);
  return 2.0 * 2.0 * tokens * heads * keys;
}

// FSDP2's collectives' pools on their own streams (RankMemory::zero3_stream_pool_bytes), for units of
// `block` parameters and, where the parameters outside the blocks form units of their own, a largest one
// of `root` parameters (FSDP2's root; split, the embedding or the head). The copy-in stream frees a unit's
// flat bf16 buffer only once the next unit's is allocated (FSDPParamGroup.wait_for_unshard), so the root's
// (or the embedding's), gathered first in the forward, and the first block's coexist; later blocks fit in
// its freed segment where it is the larger, else take a second block-sized one, and a split head, gathered
// last, takes the embedding's again. The reduce-scatter stream holds one input at a time (foreach_reduce),
// and the root's (the head's, reduced first, and the embedding's, last), reuses the blocks' freed segment
// only where it fits there.
// `block_gathered` is a block's flat all-gather buffer in bytes (gathered_bytes: 16-bit, or fp8 for the
// weights gathered so); the root's is 16-bit.
double fsdp_stream_pool_bytes(double block, double block_gathered, double root, double grad_bytes) {
  const double root_gathered = 2.0 * root;
  const double gathered = root_gathered >= block_gathered ? root_gathered + block_gathered : root_gathered + 2.0 * block_gathered;
  const double reduced = root > block ? root + block : block;
  return gathered + reduced * grad_bytes;
}

// Under Muon the matrices' states (fp32 master and one momentum) sit whole in knapsack buckets, every
// rank's padded to the largest; what stays on AdamW (embedding, head, norms, biases) is sharded
// elementwise as before.
void muon_optimizer_bytes(const Job& job, const std::vector<MuonStage>& muon, RankMemory& rank) {
  const ParallelLayout& p = job.layout;
  const OptimizerBytes& o = job.training.optimizer;
  const double muon_states = o.master + job.training.muon.momentum_bytes;
  double dense_matrices = 0, expert_matrices = 0, buckets = 0, even = 0;
  for (std::int64_t s : rank.stages) {
    const MuonStage& m = muon[static_cast<std::size_t>(s)];
    dense_matrices += m.dense.params;
    expert_matrices += m.expert.params;
    for (const MuonBuckets* b : {&m.dense, &m.expert}) {
      buckets += b->bucket_params;
      even += b->params / static_cast<double>(b->ranks);
    }
  }
  const double dense_shards = p.zero >= 1 ? static_cast<double>(p.dense_dp_shards()) : 1.0;
  const double expert_shards = p.zero >= 1 ? static_cast<double>(p.edp()) : 1.0;
  rank.optimizer_bytes = (rank.dense_params - dense_matrices) * o.states() / dense_shards +
                         (rank.expert_params - expert_matrices) * o.states() / expert_shards + buckets * muon_states;
  rank.muon_padding_bytes = (buckets - even) * muon_states;
}

}  // namespace

MemoryPlan plan_memory(const Job& job) {
  const ParallelLayout& p = job.layout;
  MemoryPlan plan;
  plan.capacity_bytes = job.cluster.gpu.hbm_capacity;
  plan.microbatches = job.microbatches();
  plan.stages = stage_plans(job.layout, job.model.mtp_depth);
  const ModelShare share = model_share(job);
  const std::vector<MuonStage> muon = muon_stages(job);
  const std::vector<double> stashes = deferred_weight_grad_bytes(job, plan, share);
  for (std::int64_t r = 0; r < p.pp; ++r) {
    RankMemory rank;
    rank.pp_rank = r;
    rank.stages = stages_of_rank(p.schedule, r, p.pp, p.vp);
    rank.inflight = inflight_per_stage(p.schedule, r, {.ranks = p.pp, .microbatches = plan.microbatches, .vp = p.vp});
    bool holds_first = std::find(rank.stages.begin(), rank.stages.end(), 0) != rank.stages.end();
    double fp8_gathered = 0, largest_layer = 0, largest_gathered = 0, largest_recomputed = 0, outside_blocks = 0, heads = 0, largest_outer_unit = 0;
    const bool root_unit = p.fsdp_outer_units == FsdpOuterUnits::root;  // else each its own (split)
    for (std::size_t i = 0; i < rank.stages.size(); ++i) {
      const StagePlan& s = plan.stages[static_cast<std::size_t>(rank.stages[i])];
      HeldParams held = params_of_stage(job, share, s, holds_first);
      rank.dense_params += held.dense;
      rank.expert_params += held.expert;
      fp8_gathered += held.fp8_gathered;
      largest_layer = std::max(largest_layer, held.largest_layer);
      largest_gathered = std::max(largest_gathered, held.largest_gathered_bytes);
      largest_recomputed = std::max(largest_recomputed, held.largest_recomputed);
      outside_blocks += held.outside_blocks;
      heads += held.head;
      largest_outer_unit = root_unit ? std::max(largest_outer_unit, held.outside_blocks)
                                     : std::max({largest_outer_unit, held.embedding, held.head});
      rank.activations_bytes += rank.inflight[i] * activation_bytes(job.model, share, s);
    }
    rank.weight_stash_bytes = stashes[static_cast<std::size_t>(r)];
    rank.activations_bytes += rank.weight_stash_bytes;
    double wb = weight_bytes(job.training);
    ModelStateBytes dense = model_state_bytes(rank.dense_params, p.zero, p.dense_dp_shards(), wb, job.training.optimizer,
                                              p.reshard_after_forward, plan.microbatches, fp8_gathered);
    ModelStateBytes expert = model_state_bytes(rank.expert_params, p.zero, p.edp(), wb, job.training.optimizer,
                                               p.reshard_after_forward, plan.microbatches);
    rank.params_bytes = dense.params + expert.params;
    rank.grads_bytes = dense.grads + expert.grads;
    rank.optimizer_bytes = dense.optimizer + expert.optimizer;
    if (!muon.empty()) muon_optimizer_bytes(job, muon, rank);
    rank.cuda_context_bytes = job.cluster.gpu.cuda_context;
    rank.workspace_bytes = job.cluster.gpu.cublas_workspace;  // one compute stream
    // ZeRO-3 gathers each layer's full weights before use and prefetches the next one: in the weight
    // dtype, or under fp8 weight gathers as gathered (the fp8 linears' weights one byte, the rest 16-bit).
    if (p.zero >= 3 && p.reshard_after_forward)
      rank.zero3_prefetch_bytes = 2.0 * (p.fp8_weight_gathers ? largest_gathered : largest_layer * wb);
    // FSDP2's root unit, gathered in bf16 from the forward's start to the backward's end; split, the head's
    // unit, gathered from its forward to its backward (the step's peak, where the backward starts), the
    // embedding's resharded after its forward.
    if (p.zero >= 3 && p.reshard_after_forward && p.fsdp_outer_units != FsdpOuterUnits::none)
      rank.zero3_root_bytes = (root_unit ? outside_blocks : heads) * 2.0;
    rank.reserved_bytes = job.training.reserved_memory;
    rank.loss_transient_bytes = loss_transient_bytes(job, plan, rank, share.tokens);
    rank.pipeline_outputs_bytes = pipeline_outputs_bytes(job, plan, rank, share.tokens);
    rank.recompute_working_bytes = largest_recomputed * share.tokens;
    rank.attention_scores_bytes = attention_scores_bytes(job, plan, rank, share.tokens);
    if (p.zero >= 3) {
      // Kept gathered, the whole gradients are model states (model_state_bytes).
      rank.grad_reduce_bytes = p.reshard_after_forward ? largest_layer * 2.0 : 0.0;
      rank.zero3_stream_pool_bytes =
          fsdp_stream_pool_bytes(largest_layer, largest_gathered, p.fsdp_outer_units == FsdpOuterUnits::none ? 0.0 : largest_outer_unit,
                                 job.training.optimizer.grads);
    }
    plan.ranks.push_back(std::move(rank));
  }
  for (std::size_t i = 1; i < plan.ranks.size(); ++i)
    if (plan.ranks[i].total_bytes() > plan.ranks[plan.peak_rank].total_bytes()) plan.peak_rank = i;
  return plan;
}

}  // namespace plumb
