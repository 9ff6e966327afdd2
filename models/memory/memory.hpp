#pragma once
// Analytic memory per pipeline rank: model states (weights, gradients, optimizer) under ZeRO,
// activations of the micro-batches in flight at the schedule's peak, and fixed overheads.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "models/parallel/stage_plan.hpp"
#include "models/scenario/job.hpp"

namespace plumb {

// Bytes of weights, gradients and optimizer states for `params` parameters sharded over `shards`
// data-parallel ranks under ZeRO stage `zero` (Rajbhandari et al. §5: stage 1 shards optimizer
// states, 2 also gradients, 3 also weights).
struct ModelStateBytes {
  double params = 0, grads = 0, optimizer = 0;
  double total() const { return params + grads + optimizer; }
};
// `resharded` false (ZeRO-3 keeping the weights gathered through the step, FSDP2's
// reshard_after_forward=False): the 16-bit weights whole, and the gradients whole
// (accumulated_grad_bytes each over a step of `microbatches`) beside the shard of `optimizer.grads`
// they are reduce-scattered into. Of `params`, `fp8_gathered` are gathered in fp8 (one byte each whole;
// ParallelLayout::fp8_weight_gathers).
ModelStateBytes model_state_bytes(double params, int zero, std::int64_t shards, double weight_bytes,
                                  const OptimizerBytes& optimizer, bool resharded = true,
                                  std::int64_t microbatches = 1, double fp8_gathered = 0);

// Bytes per gradient that FSDP2 holds whole between a step's micro-batches when it reduce-scatters only
// after the last (gradient sync off, as PyTorch's pipelining stages set it for every backward but the
// last): autograd makes them in bf16, and FSDP2's post-backward upcasts them to the reduce dtype and
// accumulates there (FSDPParamGroup.post_backward with reduce_grads false calls
// FSDPParam.to_accumulated_grad_if_needed: `unsharded_grad.to(self.reduce_dtype)`; later backwards
// accumulate_unsharded_grad_if_needed adds the new bf16 gradient into it) — `reduce_bytes` when wider
// than bf16 and the step has more than one micro-batch, else bf16's 2.
double accumulated_grad_bytes(double reduce_bytes, std::int64_t microbatches);

struct RankMemory {
  std::int64_t pp_rank = 0;
  std::vector<std::int64_t> stages;     // model stages this rank holds
  std::vector<double> inflight;         // micro-batches alive per held stage at the peak
  double dense_params = 0;              // parameters held (after TP sharding, before ZeRO)
  double expert_params = 0;             // routed-expert parameters held (after EP/ETP sharding)
  double params_bytes = 0, grads_bytes = 0, optimizer_bytes = 0, activations_bytes = 0;
  // Of `activations_bytes`: where the schedule runs weight gradients (W) apart from their input-gradient
  // backward, what the W's inputs and output gradients held between the two add to the peak (Qi et al.
  // 2024 Table 1: 32sbh a GPT layer).
  double weight_stash_bytes = 0;
  // Under Muon: what padding the whole-matrix buckets to the largest adds to `optimizer_bytes`.
  double muon_padding_bytes = 0;
  double cuda_context_bytes = 0, workspace_bytes = 0, zero3_prefetch_bytes = 0, reserved_bytes = 0;
  // ZeRO-3's units outside the blocks kept gathered across the step's peak (parallel.fsdp_outer_units): the
  // root's embedding, final norm and head, or, split, the final norm's and head's.
  double zero3_root_bytes = 0;
  // ZeRO-3's collectives allocate on their own streams, and the caching allocator reuses a freed block
  // only for the stream it was allocated on (PyTorch CUDACachingAllocator), so those streams' pools stay
  // reserved beside the compute stream's peak: FSDP2's all-gather copy-in stream holds two flat bf16
  // all-gather buffers of a block (the current one, and the previous one kept until its copy-out is done:
  // FSDPCommContext.all_gather_state), and its reduce-scatter stream one block's input in the reduce dtype
  // (foreach_reduce of 2024 allocates it there; its output becomes the sharded gradient, counted with the
  // gradients). Units outside the blocks (parallel.fsdp_outer_units) add their own buffers where they do not fit
  // the blocks' segments, the largest of them as the root: 5.5 GiB more on torchtitan's 8B, whose root
  // outweighs a block nearly fivefold (2.5 GiB split, its embedding and its head each 2.4 blocks).
  double zero3_stream_pool_bytes = 0;
  // On the rank with the head under parallel.pipeline_keeps_outputs: the 16-bit logits of every micro-batch
  // before the one in flight, kept to the step's end.
  double pipeline_outputs_bytes = 0;
  // What the loss holds for a moment beyond the logits it keeps, on the rank with the head.
  double loss_transient_bytes = 0;
  // What recomputation rebuilds for one layer's backward beyond what that layer keeps: the largest held
  // layer's dropped tensors, alive together once its forward has been rerun, for one micro-batch.
  double recompute_working_bytes = 0;
  // ZeRO-3 resharded after each backward: the block's whole 16-bit gradients, alive on the compute stream
  // until they are copied into the reduce-scatter's input, while the next block's backward runs.
  double grad_reduce_bytes = 0;
  // Materialised attention (training.attention_kernel "unfused", Megatron-LM's CoreAttention): while a
  // layer's scores are computed, the input buffer torch.baddbmm is handed (beta 0) and its output, one
  // 16-bit score per query, key and local head each, beside the probabilities the layer saves. In the
  // forward of the micro-batch that completes the peak's activations.
  double attention_scores_bytes = 0;
  // Three moments, the largest counts: the scores' (in the forward; where recomputation reruns the
  // attention, what it has rebuilt by then is left out, so this is a lower bound there), the loss's (its
  // buffers are freed before the last layer's backward reruns its forward) and the backward's, where
  // recomputation's working set and ZeRO-3's gradients belong.
  double transient_bytes() const {
    return std::max({attention_scores_bytes, loss_transient_bytes, recompute_working_bytes + grad_reduce_bytes});
  }

  double other_bytes() const {
    return cuda_context_bytes + workspace_bytes + zero3_prefetch_bytes + zero3_root_bytes + zero3_stream_pool_bytes +
           pipeline_outputs_bytes + reserved_bytes + transient_bytes();
  }
  double total_bytes() const {
    return params_bytes + grads_bytes + optimizer_bytes + activations_bytes + other_bytes();
  }
};

struct MemoryPlan {
  double capacity_bytes = 0;
  std::int64_t microbatches = 0;
  std::vector<StagePlan> stages;
  std::vector<RankMemory> ranks;  // one per pipeline rank
  std::size_t peak_rank = 0;
  bool fits() const { return ranks[peak_rank].total_bytes() <= capacity_bytes; }
};

MemoryPlan plan_memory(const Job& job);

// Parameters one rank holds for each model stage: dense after TP sharding, routed experts after EP/ETP
// sharding, both before ZeRO.
struct StageParams {
  double dense = 0, expert = 0;
  double fp8_gathered = 0;  // of `dense`: the linears' weights ZeRO-3 gathers in fp8 (ParallelLayout::fp8_weight_gathers)
};

// The bytes ZeRO-3 gathers for `params` parameters of which `fp8` are gathered in fp8: one byte each for
// those, the 16-bit parameter dtype for the rest.
inline double gathered_bytes(double params, double fp8) { return 2.0 * params - fp8; }
std::vector<StageParams> stage_params(const Job& job);

// Activation bytes one micro-batch leaves on a rank for stage `s`.
double stage_activation_bytes(const Job& job, const StagePlan& s);
// Of those, what stage `s`'s weight gradients still read after its input-gradient backward, until its W.
double stage_weight_stash_bytes(const Job& job, const StagePlan& s);
// The largest such stash over a stage's activation set, over the job's stages: what the zero-bubble
// heuristic counts a deferred W as (OpTimes::stash).
double weight_stash_share(const Job& job);

}  // namespace plumb
