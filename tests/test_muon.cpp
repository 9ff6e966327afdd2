// Muon under ZeRO-1 (DeepSeek-V4 §2.4) against hand-computed figures: Newton–Schulz FLOPs, the
// whole-matrix knapsack, and a small model's optimizer memory and Newton–Schulz work per rank.
#include <doctest/doctest.h>

#include "catalogue_fixtures.hpp"
#include "models/costs/muon_cost.hpp"
#include "models/costs/step_costs.hpp"
#include "models/memory/memory.hpp"
#include "models/step/step_summary.hpp"

using namespace plumb;

TEST_CASE("Newton-Schulz FLOPs: X·Xᵀ, A·A and B·X per iteration, on the short side") {
  // m = 1024 ≤ n = 4096: 4m²n + 2m³ per iteration, either orientation.
  const double per_step = 4.0 * 1024 * 1024 * 4096 + 2.0 * 1024 * 1024 * 1024;
  CHECK(newton_schulz_flops({1024, 4096}, 10) == 10 * per_step);
  CHECK(newton_schulz_flops({4096, 1024}, 10) == 10 * per_step);
}

TEST_CASE("whole matrices go largest first to the least-loaded rank, buckets padded to the largest") {
  std::vector<MuonMatrix> xs;
  for (double size : {8, 7, 6, 5, 4, 3, 2, 1}) xs.push_back({size, 1});
  // 8,7,6 open the three ranks; 5→(6), 4→(7), 3→(8); at 11,11,11 the 2 goes to the first, the 1 to the next.
  const MuonBuckets b = assign_matrices(xs, 3, 5);
  CHECK(b.ranks == 3);
  CHECK(b.params == 36);
  CHECK(b.bucket_params == 13);
  CHECK(b.padding() == doctest::Approx(13.0 * 3 / 36 - 1));
  CHECK(b.most_per_rank == 3);
  // More ranks than matrices: the degree stops at the matrix count.
  CHECK(assign_matrices({{4, 4}, {2, 2}}, 8, 5).ranks == 2);
  // Twelve equal matrices on two ranks cannot keep to five each: six go to each.
  const MuonBuckets full = assign_matrices(std::vector<MuonMatrix>(12, MuonMatrix{2, 2}), 2, 5);
  CHECK(full.most_per_rank == 6);
  CHECK(full.padding() == 0);
}

TEST_CASE("a small model under Muon ZeRO-1: optimizer bytes and Newton-Schulz work per rank by hand") {
  // tiny-gqa: 4 layers, h 1024, 16 heads × 64, 4 KV heads, SwiGLU 4096, vocab 32000. TP1 PP1 DP32, ZeRO-1,
  // dense ZeRO degree capped at 4.
  const std::vector<std::string> sets{"parallel.tp=1", "parallel.pp=1", "parallel.dp=32", "parallel.zero=1",
                                      "training.optimizer.kind=muon", "training.optimizer.dense_zero_cap=4"};
  const Job job = load_scenario(data_dir() / "tests/fixtures/scenarios/inline_model.json", sets);
  const double M = 1024.0 * 1024.0;
  // Per layer: w_up, w_gate, w_down (4M each), w_q, w_o (1M), w_k, w_v (0.25M): 28 matrices, 58M.
  const std::vector<MuonStage> stages = muon_stages(job);
  REQUIRE(stages.size() == 1);
  const MuonBuckets& dense = stages[0].dense;
  CHECK(dense.matrices == 28);
  CHECK(dense.params == 58 * M);
  CHECK(dense.ranks == 4);
  CHECK(dense.bucket_params == 14.5 * M);  // 3 × 4M + 2 × 1M + 2 × 0.25M on every rank
  CHECK(dense.most_per_rank == 7);         // the limit of 5 gives way to 28 / 4
  CHECK(stages[0].expert.matrices == 0);
  const double ns_per_step = 3 * (4.0 * M * 4096 + 2.0 * M * 1024) + 2 * 6.0 * M * 1024 +
                             2 * (4.0 * 256 * 256 * 1024 + 2.0 * 256 * 256 * 256);
  CHECK(stages[0].newton_schulz_flops == doctest::Approx(10 * ns_per_step).epsilon(1e-12));

  // Optimizer bytes: the bucket at fp32 master + one fp32 momentum; embedding, head and norms on AdamW
  // (fp32 master + two fp32 moments) sharded elementwise over 32.
  const double adamw_params = 2 * 32000.0 * 1024 + (4 * 2 + 1) * 1024.0;
  const MemoryPlan muon = plan_memory(job);
  CHECK(muon.ranks[0].optimizer_bytes == doctest::Approx(14.5 * M * 8 + adamw_params * 12 / 32).epsilon(1e-12));
  CHECK(muon.ranks[0].muon_padding_bytes == 0);
  Job adamw = job;
  adamw.training.optimizer_kind = OptimizerKind::adamw;
  CHECK(plan_memory(adamw).ranks[0].optimizer_bytes == doctest::Approx((58 * M + adamw_params) * 12 / 32).epsilon(1e-12));

  // Newton-Schulz time: the busiest rank's FLOPs, no faster than the bf16 peak.
  const StepCosts costs = step_costs(job);
  const double peak = job.cluster.gpu.peak_dense.at(MathDtype::bf16);
  CHECK(costs.stages[0].newton_schulz > stages[0].newton_schulz_flops / peak);
  CHECK(costs.stages[0].newton_schulz < stages[0].newton_schulz_flops / (0.2 * peak));
  CHECK(costs.stages[0].optimizer > costs.stages[0].newton_schulz);
  CHECK(step_costs(adamw).stages[0].newton_schulz == 0);
}

TEST_CASE("Muon settings without Muon are an error naming the key") {
  CHECK_THROWS_WITH(load_scenario(data_dir() / "tests/fixtures/scenarios/inline_model.json",
                                  {"training.optimizer.dense_zero_cap=4"}),
                    doctest::Contains("\"dense_zero_cap\" is a Muon setting"));
}
