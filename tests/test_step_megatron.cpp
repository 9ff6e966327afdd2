// The optimizer step's passes besides Adam's update, as the frameworks run them: Megatron-Core's over the
// gradient buffer and the optimizer shard (frameworks/megatron-core-2026-01.json), torchtitan's foreach
// kernels over the FSDP shard (frameworks/torchtitan-2024-12.json).
#include <doctest/doctest.h>

#include "models/memory/memory.hpp"
#include "step_fixtures.hpp"

using namespace plumb;
using namespace plumb::test;

namespace {
// The same optimizer without the step's other passes.
const std::string kUpdateOnly =
    R"(training.optimizer={"grads": "fp32", "master_weights": "fp32", "moments": "fp32", "params_are_master": true})";

// What the passes add to stage 0's optimizer time: per parameter of the whole buffer, of those reduced
// over DP > 1, and of the 1/DP shard.
double added(const std::string& file) {
  const Job with = scenario(file), without = scenario(file, {kUpdateOnly});
  return stage_costs(with).optimizer - stage_costs(without).optimizer;
}
}  // namespace

TEST_CASE("Megatron-Core's optimizer step also zeroes, checks, pre-scales and norms the gradients and rereads the master weights") {
  // Megatron-LM 23e00ed0: zero_grad_buffer (4 bytes written) and the NaN check's norm (4 read) over the whole
  // fp32 buffer; with DP > 1 the 1/DP scaling (4 + 4); over the shard the clipping norm (4) and the
  // master weights read for the bf16 copy (4).
  const Job dp4 = scenario("published/simumax-b200-llama3-70b-tp1-ep1-pp2-mbc4.json");  // TP1 PP2 DP4
  const OptimizerStepPasses& x = dp4.training.optimizer.step_passes;
  CHECK(x.grad_buffer == 8.0);
  CHECK(x.grad_prescale == 8.0);
  CHECK(x.shard == 8.0);
  CHECK(scenario("published/simumax-b200-llama3-70b-tp1-ep1-pp2-mbc4.json", {kUpdateOnly}).training.optimizer.step_passes.shard == 0.0);
  const GpuSpec& gpu = dp4.cluster.gpu;
  const double rate = gpu.hbm_bandwidth * gpu.hbm_efficiency;
  const StageParams held = stage_params(dp4)[0];
  const double n = held.dense + held.expert;
  CHECK(relative(added("published/simumax-b200-llama3-70b-tp1-ep1-pp2-mbc4.json"), (n * (8 + 8) + n / 4 * 8) / rate) < 1e-9);
  // DP1 (TP8): nothing to pre-scale, and the shard is the whole buffer.
  const Job dp1 = scenario("published/simumax-b200-llama3-70b-tp8-ep1-pp1-mbc4.json");
  const StageParams all = stage_params(dp1)[0];
  CHECK(relative(added("published/simumax-b200-llama3-70b-tp8-ep1-pp1-mbc4.json"), (all.dense + all.expert) * (8 + 8) / rate) < 1e-9);
}

TEST_CASE("torchtitan of December 2024 steps AdamW with PyTorch's foreach kernels, June 2025's with the fused one") {
  // torchtitan 9dec370 builds AdamW with foreach=not fused, its configs leave fused off: _multi_tensor_adam
  // moves 84 fp32 bytes a parameter, 54 more than a fused update's 30 (frameworks/torchtitan-2024-12.json),
  // over the rank's FSDP shard. torchtitan 820504e runs the fused kernel: none.
  const Job december = scenario("published/torchtitan-h100-8b-fsdp8-sac.json");
  CHECK(december.training.optimizer.step_passes.shard == 54.0);
  CHECK(december.training.optimizer.step_passes.grad_buffer == 0.0);
  CHECK(scenario("published/torchtitan-asynctp-8b-bf16-vanilla-tp.json").training.optimizer.step_passes.shard == 0.0);
  const GpuSpec& gpu = december.cluster.gpu;
  const StageParams held = stage_params(december)[0];
  const double shard = (held.dense + held.expert) / 8;  // ZeRO-3 over 8 ranks
  CHECK(relative(added("published/torchtitan-h100-8b-fsdp8-sac.json"), shard * 54 / (gpu.hbm_bandwidth * gpu.hbm_efficiency)) < 1e-9);
  // The count is a floor: on the H200 fixture's shard of the same model (1,003,782,656 parameters) the 84
  // bytes take 19.6 ms at 4.8 TB/s × 0.896, the measured foreach step 23.99 ms (18% more).
}
