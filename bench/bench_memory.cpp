// How fast the foundation answers: scenario loading (strict parsing of scenario, preset and
// profiles) and the analytic memory plan the planner will evaluate per candidate layout.
#include <benchmark/benchmark.h>

#include "models/input/catalogue.hpp"
#include "models/memory/memory.hpp"

namespace {

const plumb::Job& deepseek() {
  static const plumb::Job job = plumb::load_scenario(plumb::data_dir() / "scenarios/deepseek-v3-2048xh800.json");
  return job;
}

void BM_LoadScenario(benchmark::State& state) {
  for (auto _ : state)
    benchmark::DoNotOptimize(plumb::load_scenario(plumb::data_dir() / "scenarios/deepseek-v3-2048xh800.json"));
}
BENCHMARK(BM_LoadScenario)->Unit(benchmark::kMicrosecond);

void BM_PlanMemory(benchmark::State& state, plumb::ScheduleKind schedule) {
  plumb::Job job = deepseek();
  job.layout.schedule = schedule;
  for (auto _ : state) benchmark::DoNotOptimize(plumb::plan_memory(job));
  state.counters["plans/s"] = benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK_CAPTURE(BM_PlanMemory, deepseek_v3_dualpipe, plumb::ScheduleKind::dualpipe)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_PlanMemory, deepseek_v3_1f1b, plumb::ScheduleKind::one_f_one_b)->Unit(benchmark::kMicrosecond);

}  // namespace
