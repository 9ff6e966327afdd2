#pragma once
// Time of one op of a layer on one GPU: a roofline over the GPU profile. GEMMs reach the profile's
// measured GEMM efficiency for their size; fused attention its attention efficiency; memory-bound
// ops the HBM bandwidth. Both `plumb ops` and the training step read their times from here.
#include "models/costs/flops.hpp"
#include "models/scenario/job.hpp"

namespace plumb {

struct OpTime {
  double seconds = 0;
  bool compute_bound = true;
};

// pass: 0 forward, 1 input gradient, 2 weight gradient.
// Reads the GPU profile and, of the training, its precision and attention kernel.
OpTime op_time(const LayerOp& op, int pass, const GpuSpec& gpu, const TrainingSpec& training);
// A GEMM's efficiency of the GPU's peak as the framework runs it in `pass`: one kernel (a grouped one as
// one grouped kernel), or, with training.grouped_gemm_streams, a grouped GEMM's groups as dense GEMMs
// queued round-robin on that many streams (Transformer Engine's multi_stream_cublas_gemm).
double gemm_efficiency(const GpuSpec& gpu, const GemmShape& g, MathDtype dtype, int pass, const TrainingSpec& training);

// The HBM bytes a pass of `op` moves: its own, or with separate linears (LayerOp::parts) the sum of
// theirs, each reading or writing the whole input.
double pass_bytes(const LayerOp& op, int pass);

// The time recomputation spends on `op`'s forward under a selective `r`: its recompute_share of the
// forward, or, in a transformer layer, of an op of separate linears the one linear the rule reruns, at
// its own shape (recomputed_linear).
double recompute_seconds(const LayerOp& op, const Recompute& r, const AttentionSpec& a, bool transformer_layer, const GpuSpec& gpu,
                         const TrainingSpec& training);

// How the job's layout shards one micro-batch's ops on one GPU.
OpContext op_context(const ParallelLayout& layout, const TrainingSpec& training, const GpuSpec& gpu);

}  // namespace plumb
