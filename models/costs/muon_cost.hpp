#pragma once
// What Muon costs a stage beyond AdamW's elementwise update: the Newton–Schulz GEMMs on the busiest
// rank's bucket, batched by shape and run in BF16 (DeepSeek-V4 §2.4), priced like every other GEMM.
#include <vector>

#include "models/optimizer/muon.hpp"
#include "models/scenario/job.hpp"

namespace plumb {

struct MuonStageCost {
  MuonStage plan;
  bool bf16_expert_grads = true;
  double update_bytes = 0;           // HBM bytes per matrix parameter of the elementwise update
  double newton_schulz_seconds = 0;  // the busiest rank's iterations
};

// Seconds of `steps` Newton–Schulz iterations over `matrices`, same-shaped ones batched into one
// grouped GEMM per product.
double newton_schulz_seconds(const std::vector<MuonMatrix>& matrices, std::int64_t steps, const GpuSpec& gpu,
                             const TrainingSpec& training);

// One per model stage; empty under AdamW.
std::vector<MuonStageCost> muon_stage_costs(const Job& job);

}  // namespace plumb
