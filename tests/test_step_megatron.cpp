// The training step under Megatron-Core's behaviours (frameworks/megatron-core-2026-01.json): the
// optimizer step's passes over the gradient buffer and the optimizer shard besides Adam's update.
#include <doctest/doctest.h>

#include "models/memory/memory.hpp"
#include "step_fixtures.hpp"

using namespace plumb;
using namespace plumb::test;

namespace {
// The same optimizer without the step's other passes.
const std::string kUpdateOnly = R"(training.optimizer={"grads": "fp32", "master_weights": "fp32", "moments": "fp32"})";

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
