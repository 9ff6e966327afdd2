#include "models/costs/data_parallel_terms.hpp"

namespace plumb {

double unsharded_accumulation_bytes(double reduce_bytes, std::int64_t microbatches) {
  // Per step: with one micro-batch, the bf16 gradients copied into the reduce-scatter's input (read 2,
  // write reduce_bytes). With more, in the accumulation dtype A (models/memory accumulated_grad_bytes):
  // the first backward's upcast when A is wider than bf16 (read 2, write A), each later one's addition
  // of its bf16 gradient into the accumulation (read A and 2, write A: FSDP2's post-backward, or
  // autograd's in-place AccumulateGrad when A is bf16), and after the last the accumulation copied into
  // the reduce-scatter's input (foreach_reduce's _chunk_cat: read A, write reduce_bytes). All eager
  // passes on the compute stream, spread here evenly over the step's backwards.
  if (microbatches <= 1) return 2.0 + reduce_bytes;
  const double a = accumulated_grad_bytes(reduce_bytes, microbatches), m = static_cast<double>(microbatches);
  const double upcast = a > 2.0 ? 2.0 + a : 0.0;
  return (upcast + (m - 1.0) * (2.0 * a + 2.0) + a + reduce_bytes) / m;
}

void add_data_parallel_terms(StageCost& s, const StageParams& held, const ParallelLayout& p,
                             const DataParallelGroups& groups, const DataParallelRates& rates, const MuonStageCost* muon) {
  const double grads = rates.grads, stream_rate = rates.stream_rate;
  // The weights are gathered in bf16, those gathered in fp8 in one byte. Before each gather the fp8 ones
  // are cast on their shard, from the fp32 master to fp8 with the step's precomputed scale (torchao
  // WeightWithDynamicFloat8CastTensor.fsdp_pre_all_gather, on FSDP2's all-gather copy-in stream, so beside
  // the gather): 4 bytes read and 1 written a shard weight.
  const double shards = static_cast<double>(p.dense_dp_shards()), fp8_shard = held.fp8_gathered / shards;
  const double shard_casts = fp8_shard * 5.0 / stream_rate;
  // Under HSDP each reduce-scatter's output, the shard's summed gradients, is then all-reduced over the
  // replicas (PyTorch FSDP's HYBRID_SHARD and FSDP2 on a 2-D mesh: reduce-scatter, then all-reduce).
  const double replica_sum = groups.replica_seconds(held.dense * grads / shards);
  const double gather_seconds = groups.weight_gather_seconds(held) + shard_casts;
  if (p.zero >= 3 && !p.reshard_after_forward) {
    // FSDP2 with reshard_after_forward=False (torchtitan under pipeline parallelism): the weights are
    // gathered once and kept, the gradients accumulated unsharded and reduce-scattered after the last
    // micro-batch — ZeRO-1's traffic — and every backward passes over the accumulation on the compute
    // stream (unsharded_accumulation_bytes).
    s.grad_sync = groups.seconds(CollectiveOp::reduce_scatter, held, grads) + replica_sum;
    s.param_gather = gather_seconds;
    const double accumulate = (held.dense + held.expert) * unsharded_accumulation_bytes(grads, rates.microbatches) / stream_rate;
    s.backward.add_compute(accumulate);
    s.weight_grad.add_compute(accumulate);
  } else {
    if (p.zero >= 2) {
      // Stages 2 and 3 keep only their shard of the accumulated gradients, so each micro-batch's
      // gradients are reduce-scattered as its backward makes them, not once per step ("gradient
      // reduction is required after every backward because of gradient partitioning", DeepSpeed
      // maintainer tjruwase, deepspeedai/DeepSpeed#2252). The pass that makes the weight gradients
      // carries it: the full backward, or a zero-bubble schedule's W half.
      const double scatter = groups.seconds(CollectiveOp::reduce_scatter, held, grads) + replica_sum;
      s.backward.background += scatter;
      s.weight_grad.background += scatter;
      if (p.zero >= 3) {
        // FSDP2 first copies the block's unsharded 16-bit gradients into the reduce-dtype input of its
        // reduce-scatter (foreach_reduce: _chunk_cat, widening to fp32 in torchtitan's configs) and the
        // compute stream waits for that copy before it frees them (PyTorch's _fsdp_collectives.py: in 2024
        // on the reduce-scatter stream, the compute stream waiting on it; now on the compute stream
        // itself). fp32 and bf16 reductions divide inside NCCL (ReduceOp.AVG): no separate divide pass.
        const double copy_in = (held.dense + held.expert) * unsharded_accumulation_bytes(grads, 1) / stream_rate;
        s.backward.add_compute(copy_in);
        s.weight_grad.add_compute(copy_in);
      }
    }
    if (p.zero >= 3) {
      // ZeRO-3 also gathers the stage's weights for every pass that uses them (W does not).
      const double gather = gather_seconds;
      s.forward.background += gather;
      s.input_grad.background += gather;
      s.backward.background += gather;
      // Each gathered block is unpacked on the compute stream (PyTorch FSDP2 foreach_all_gather_copy_out:
      // split_with_sizes_copy from the flat all-gather output into the unsharded parameters): the
      // gathered weights read and written once per gather.
      const double copy_out = (gathered_bytes(held.dense, held.fp8_gathered) + gathered_bytes(held.expert, 0.0)) * 2.0 / stream_rate;
      for (Pass* pass : {&s.forward, &s.input_grad, &s.backward}) pass->add_compute(copy_out);
    } else {
      if (p.zero <= 1) {  // the accumulated gradients, once per step
        const CollectiveOp reduce = p.zero == 0 ? CollectiveOp::all_reduce : CollectiveOp::reduce_scatter;
        s.grad_sync = groups.seconds(reduce, held, grads) + replica_sum;
        if (muon && muon->bf16_expert_grads)  // DeepSeek-V4 §2.4: BF16 expert gradients by all-to-all, summed locally in FP32
          s.grad_sync = groups.dense_seconds(reduce, held.dense * grads) +
                        groups.expert_seconds(CollectiveOp::all_to_all, held.expert * 2.0);
      }
      if (p.zero >= 1) s.param_gather = gather_seconds;
    }
  }
  // This rank's share of `dense` and `expert` parameters updated elementwise (sharded from ZeRO-1 on).
  auto elementwise_share = [&](double dense, double expert) {
    if (p.zero < 1) return dense + expert;
    return dense / shards + expert / static_cast<double>(p.edp());
  };
  // The step's passes besides the update: over every gradient the rank holds, again over those reduced
  // over more than one rank, and over its shard.
  const OptimizerStepPasses& x = rates.step_passes;
  const double reduced = (p.dense_dp_shards() > 1 ? held.dense : 0.0) + (p.edp() > 1 ? held.expert : 0.0);
  // Under fp8 weight gathers, after the update: the amax of every fp8 weight's fp32 shard, read once
  // (torchao precompute_float8_dynamic_scale_for_fsdp: one _foreach_norm, then one all-reduce of the
  // stacked amaxes, too small to price).
  const double amax = fp8_shard * 4.0;
  const double passes = ((held.dense + held.expert) * x.grad_buffer + reduced * x.grad_prescale +
                         elementwise_share(held.dense, held.expert) * x.shard + amax) / stream_rate;
  if (!muon) {
    s.optimizer = elementwise_share(held.dense, held.expert) * rates.update_bytes / stream_rate + passes;
    return;
  }
  // Muon: what stays on AdamW is sharded elementwise; the matrices are updated whole, the busiest rank's
  // bucket (one momentum buffer instead of two moments), after their Newton–Schulz iterations.
  const double on_adamw = elementwise_share(held.dense - muon->plan.dense.params, held.expert - muon->plan.expert.params);
  const double buckets = muon->plan.dense.bucket_params + muon->plan.expert.bucket_params;
  s.newton_schulz = muon->newton_schulz_seconds;
  s.optimizer = (on_adamw * rates.update_bytes + buckets * muon->update_bytes) / stream_rate + s.newton_schulz + passes;
}

}  // namespace plumb
