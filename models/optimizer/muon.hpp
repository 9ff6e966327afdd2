#pragma once
// Muon under ZeRO as DeepSeek-V4 trains with it (technical report §2.4): the matrices each model stage
// holds, assigned whole to data-parallel ranks (Newton–Schulz orthogonalises a whole matrix, so the
// elementwise sharding of ZeRO-1 is out), and the Newton–Schulz work on the busiest rank.
//
// Assumptions the report leaves open, stated here: under tensor (or expert-tensor) parallelism each
// rank orthogonalises its own shard of a split matrix (Megatron-Core's distributed Muon calls this
// `tp_mode="blockwise"`); buckets are formed per model stage; the router's weight is a matrix like any
// other (the report keeps only embedding, head, norms and mHC gates/biases on AdamW).
#include <cstdint>
#include <vector>

#include "models/parallel/stage_plan.hpp"
#include "models/scenario/job.hpp"

namespace plumb {

// One matrix as a rank holds it, [rows × cols].
struct MuonMatrix {
  double rows = 0, cols = 0;
  double size() const { return rows * cols; }
};

// FLOPs of `steps` Newton–Schulz iterations on one rows×cols matrix (Jordan et al. 2024, the quintic
// iteration): with X oriented m×n, m ≤ n, each step forms A = X·Xᵀ (2m²n), A·A (2m³) and B·X (2m²n).
double newton_schulz_flops(const MuonMatrix& x, std::int64_t steps);

// Whole matrices spread over `ranks` by a greedy knapsack (largest first onto the least-loaded rank
// that has room), every rank's bucket padded to the largest.
struct MuonBuckets {
  std::int64_t ranks = 1;          // the ZeRO degree used: capped, and never above the matrix count
  std::int64_t matrices = 0;
  std::int64_t most_per_rank = 0;  // matrices on the fullest rank
  double params = 0;               // all matrices' parameters
  double bucket_params = 0;        // the largest bucket's, which every rank's bucket is padded to
  std::vector<MuonMatrix> busiest; // the matrices of the rank with the most Newton–Schulz work
  double padding() const { return params > 0 ? bucket_params * static_cast<double>(ranks) / params - 1.0 : 0.0; }
};
MuonBuckets assign_matrices(std::vector<MuonMatrix> matrices, std::int64_t ranks, std::int64_t per_rank_limit);

struct MuonStage {
  MuonBuckets dense;   // dense matrices over the dense ZeRO group (dp × cp), capped
  MuonBuckets expert;  // expert matrices over the expert data-parallel group, uncapped
  double newton_schulz_flops = 0;  // on the busiest rank, dense and expert buckets together
};

// The matrices one rank holds for stage `s` (after TP/EP/ETP), before ZeRO: dense and expert.
struct StageMatrices {
  std::vector<MuonMatrix> dense, expert;
};
StageMatrices stage_matrices(const Job& job, const StagePlan& s);

// Every model stage's Muon plan; empty when the job trains with AdamW.
std::vector<MuonStage> muon_stages(const Job& job);

}  // namespace plumb
