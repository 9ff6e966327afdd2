// How fast a training step is predicted: the per-stage costs, the analytic estimate the planner
// sweeps with (target ≥ 100,000 per second per core) and the discrete-event step (target ≤ 1 s for
// DeepSeek-V3 on 2048 H800 in symmetric mode), with the step graph's size and memory.
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include "models/input/catalogue.hpp"
#include "models/step/step_builder.hpp"
#include "models/step/step_estimate.hpp"

namespace {

plumb::Job scenario(const char* name) { return plumb::load_scenario(plumb::data_dir() / "scenarios" / name); }

void BM_StepCosts(benchmark::State& state, const char* name) {
  plumb::Job job = scenario(name);
  for (auto _ : state) benchmark::DoNotOptimize(plumb::step_costs(job));
  state.counters["costs/s"] = benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK_CAPTURE(BM_StepCosts, deepseek_v3, "deepseek-v3-2048xh800.json")->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_StepCosts, gpt3_175b, "gpt3-175b-megatron.json")->Unit(benchmark::kMicrosecond);

void BM_Estimate(benchmark::State& state, const char* name) {
  plumb::Job job = scenario(name);
  plumb::StepCosts costs = plumb::step_costs(job);
  for (auto _ : state) benchmark::DoNotOptimize(plumb::estimate_step(job.layout, job.microbatches(), costs));
  state.counters["estimates/s"] = benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK_CAPTURE(BM_Estimate, deepseek_v3, "deepseek-v3-2048xh800.json")->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Estimate, gpt3_175b, "gpt3-175b-megatron.json")->Unit(benchmark::kMicrosecond);

void BM_SimulateStep(benchmark::State& state, const char* name) {
  plumb::Job job = scenario(name);
  plumb::StepCosts costs = plumb::step_costs(job);
  double tasks = 0, events = 0, graph_bytes = 0;
  for (auto _ : state) {
    plumb::StepSimulation s = plumb::simulate_step(job, costs);
    tasks = static_cast<double>(s.graph.size());
    events = static_cast<double>(s.result.events);
    graph_bytes = s.graph.bytes_per_task() * tasks;
  }
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  state.counters["tasks"] = tasks;
  state.counters["events"] = events;
  state.counters["graph_MB"] = graph_bytes / 1e6;
  state.counters["max_rss_MB"] = static_cast<double>(usage.ru_maxrss) / 1024.0;
}
BENCHMARK_CAPTURE(BM_SimulateStep, deepseek_v3, "deepseek-v3-2048xh800.json")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_SimulateStep, gpt3_175b, "gpt3-175b-megatron.json")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_SimulateStep, llama3_405b, "llama3-405b-16k-h100.json")->Unit(benchmark::kMillisecond);

// --full: every one of DeepSeek-V3's 2048 GPUs, each collective a barrier (target ≤ 60 s).
void BM_SimulateStepFull(benchmark::State& state) {
  plumb::Job job = scenario("deepseek-v3-2048xh800.json");
  plumb::StepCosts costs = plumb::step_costs(job);
  double tasks = 0, events = 0;
  for (auto _ : state) {
    plumb::StepSimulation s = plumb::simulate_step(job, costs, plumb::StepMode::full);
    tasks = static_cast<double>(s.graph.size());
    events = static_cast<double>(s.result.events);
  }
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  state.counters["tasks"] = tasks;
  state.counters["events"] = events;
  state.counters["max_rss_MB"] = static_cast<double>(usage.ru_maxrss) / 1024.0;
}
BENCHMARK(BM_SimulateStepFull)->Iterations(1)->Unit(benchmark::kSecond)->UseRealTime();

}  // namespace
