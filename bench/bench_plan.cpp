// The planner at the scale: DeepSeek-V3 on 512–4096 H800, H100 or H200 (two fabrics), every
// schedule, ZeRO stage, EP, PP, micro-batch and recomputation, with the discrete-event re-rank of the
// best 100 — target ≤ 60 s on 2 cores. Reports layouts per second.
#include <benchmark/benchmark.h>

#include "models/input/catalogue.hpp"
#include "models/plan/planner.hpp"

namespace {

void BM_PlanDeepSeekV3(benchmark::State& state) {
  plumb::Job base = plumb::load_scenario(plumb::data_dir() / "scenarios/deepseek-v3-2048xh800.json",
                                         {"plan.gpus=[512, 1024, 2048, 4096]", "plan.gpu=[\"h800-sxm\", \"h100-sxm\", \"h200-sxm\"]",
                                          "plan.fabric=[\"h800-deepseek\", \"dgx-h100-ndr\"]", "plan.top=100"});
  plumb::PlanSpace space = plumb::read_plan_space(base);
  plumb::PlanOptions options;
  options.threads = static_cast<int>(state.range(0));
  plumb::PlanOutcome o;
  for (auto _ : state) o = plumb::run_plan(base, space, options);
  state.counters["layouts"] = static_cast<double>(o.evaluated);
  state.counters["feasible"] = static_cast<double>(o.feasible);
  state.counters["layouts/s"] = static_cast<double>(o.evaluated) / o.seconds;
  state.counters["seconds"] = o.seconds;
}
BENCHMARK(BM_PlanDeepSeekV3)->Arg(2)->Iterations(1)->Unit(benchmark::kSecond)->UseRealTime();

}  // namespace
