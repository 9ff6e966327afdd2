#pragma once
// A stage's once-per-step and per-micro-batch data-parallel terms: its gradient reduction and parameter
// gathers under its ZeRO stage (and FSDP2's ways of running them), the framework's passes over the
// gradients that come with them, and its share of the optimizer update.
#include <cstdint>

#include "models/costs/collective.hpp"
#include "models/costs/muon_cost.hpp"
#include "models/costs/stage_cost.hpp"
#include "models/parallel/layout.hpp"
#include "models/memory/memory.hpp"

namespace plumb {

// Where a stage's data-parallel collectives run: its dense parameters over the data-parallel group
// (times CP), its routed experts over the expert data-parallel group, each as the layout places them.
struct DataParallelGroups {
  GroupPlacement dense, expert;
  CollectiveLinks links;
  // HSDP (ParallelLayout::dp_shard): `dense` is one shard group, and the groups that hold the same shard
  // sum their reduced gradients over `replicas`, one rank from each ({1, 1}: no replicas).
  GroupPlacement replicas{1, 1};
  double replica_seconds(double bytes) const {
    return replicas.gpus > 1 ? collective_seconds(CollectiveOp::all_reduce, bytes, replicas, links) : 0.0;
  }
  double dense_seconds(CollectiveOp op, double bytes) const { return collective_seconds(op, bytes, dense, links); }
  double expert_seconds(CollectiveOp op, double bytes) const { return collective_seconds(op, bytes, expert, links); }
  // `bytes_per_param` of every parameter the stage holds, dense and expert each over its own group.
  double seconds(CollectiveOp op, const StageParams& held, double bytes_per_param) const {
    return dense_seconds(op, held.dense * bytes_per_param) + expert_seconds(op, held.expert * bytes_per_param);
  }
  // The weights' all-gather: 16-bit, the weights gathered in fp8 one byte (gathered_bytes).
  double weight_gather_seconds(const StageParams& held) const {
    return dense_seconds(CollectiveOp::all_gather, gathered_bytes(held.dense, held.fp8_gathered)) +
           expert_seconds(CollectiveOp::all_gather, gathered_bytes(held.expert, 0.0));
  }
};

struct DataParallelRates {
  double grads = 2;              // bytes per gradient as reduced (the reduce dtype)
  double update_bytes = 0;       // HBM bytes per parameter of the optimizer update
  OptimizerStepPasses step_passes;  // the step's other passes (TrainingSpec's optimizer)
  double stream_rate = 0;        // bytes/s of a memory-bound pass (HBM bandwidth at its efficiency)
  std::int64_t microbatches = 1;  // per step on each pipeline
};

// Adds `held`'s data-parallel terms to stage `s` under layout `p`; `muon` null under AdamW.
void add_data_parallel_terms(StageCost& s, const StageParams& held, const ParallelLayout& p,
                             const DataParallelGroups& groups, const DataParallelRates& rates, const MuonStageCost* muon);

// HBM bytes per parameter of FSDP2's passes over a stage's whole gradients on the compute stream, each
// backward, averaged over a step's `microbatches`, reducing in `reduce_bytes` per gradient: with one
// micro-batch their copy into the reduce-scatter's input; with more (kept whole until the last:
// reshard_after_forward false) their accumulation as well. See the definition for PyTorch's steps.
double unsharded_accumulation_bytes(double reduce_bytes, std::int64_t microbatches);

}  // namespace plumb
