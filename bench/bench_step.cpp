// How fast a training step is predicted: the per-stage costs, the analytic estimate the planner
// sweeps with (target ≥ 100,000 per second per core) and the discrete-event step (target ≤ 1 s for
// DeepSeek-V3 on 2048 H800 in symmetric mode), with the step graph's size and memory.
#include <benchmark/benchmark.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

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

// --full at the scales people train at (issue 28's targets on this 2-core machine: DeepSeek-V3 at 16,384
// H800 in ≤ 30 s and ≤ 4 GiB; Llama 3 405B at 100,352 H100 in ≤ 10 min and ≤ 8 GiB). Each case runs in
// a child process so that its peak memory is its own (wait4's ru_maxrss), from reading the scenario to
// the step's accounting; `--every-gpu` cases build every GPU's tasks (the worst case: every GPU differs).
struct FullCase {
  const char* scenario;
  std::vector<std::string> overrides;
  plumb::StepMode mode = plumb::StepMode::full;
};

void BM_FullRank(benchmark::State& state, const FullCase& c) {
  struct Figures {
    double seconds = 0, events = 0, tasks = 0, simulated = 0, gpus = 0;
  } figures;
  long max_rss_kb = 0;
  for (auto _ : state) {
    int pipe_fd[2];
    if (pipe(pipe_fd) != 0) state.SkipWithError("pipe failed");
    const pid_t child = fork();
    if (child == 0) {
      close(pipe_fd[0]);
      const auto start = std::chrono::steady_clock::now();
      plumb::Job job = plumb::load_scenario(plumb::data_dir() / "scenarios" / c.scenario, c.overrides);
      plumb::StepCosts costs = plumb::step_costs(job);
      plumb::StepSimulation s = plumb::simulate_step(job, costs, c.mode);
      Figures f{std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), static_cast<double>(s.result.events),
                static_cast<double>(s.graph.size()), static_cast<double>(s.gpu_rank.size()), static_cast<double>(s.job_gpus)};
      if (write(pipe_fd[1], &f, sizeof f) != static_cast<ssize_t>(sizeof f)) _exit(2);
      _exit(0);
    }
    close(pipe_fd[1]);
    const bool got = read(pipe_fd[0], &figures, sizeof figures) == static_cast<ssize_t>(sizeof figures);
    close(pipe_fd[0]);
    int status = 0;
    rusage usage{};
    wait4(child, &status, 0, &usage);
    if (!got || status != 0) state.SkipWithError("the simulation failed in its child process");
    max_rss_kb = usage.ru_maxrss;
    state.SetIterationTime(figures.seconds);
  }
  state.counters["job_gpus"] = figures.gpus;
  state.counters["simulated_gpus"] = figures.simulated;
  state.counters["tasks"] = figures.tasks;
  state.counters["events"] = figures.events;
  state.counters["events_per_s"] = figures.seconds > 0 ? figures.events / figures.seconds : 0;
  state.counters["max_rss_MB"] = static_cast<double>(max_rss_kb) / 1024.0;
  state.counters["bytes_per_simulated_gpu"] = figures.simulated > 0 ? static_cast<double>(max_rss_kb) * 1024.0 / figures.simulated : 0;
  state.counters["bytes_per_job_gpu"] = figures.gpus > 0 ? static_cast<double>(max_rss_kb) * 1024.0 / figures.gpus : 0;
}

const std::vector<std::string> kV3At16k{"cluster.nodes=2048", "parallel.dp=1024", "training.global_batch=122880"};
const std::string kStragglers = R"(perturbations=[{"gpu": 5000, "compute": 0.9}, {"node": 700, "network": 0.5}, {"gpus": [17, 4242, 9999], "compute": 0.95}])";

BENCHMARK_CAPTURE(BM_FullRank, v3_2k, FullCase{"deepseek-v3-2048xh800.json", {}})->Iterations(1)->UseManualTime()->Unit(benchmark::kSecond);
BENCHMARK_CAPTURE(BM_FullRank, v3_2k_sampled_routing, FullCase{"deepseek-v3-2048xh800.json", {"training.moe_imbalance=sampled"}})
    ->Iterations(1)->UseManualTime()->Unit(benchmark::kSecond);
BENCHMARK_CAPTURE(BM_FullRank, v3_2k_every_gpu, FullCase{"deepseek-v3-2048xh800.json", {}, plumb::StepMode::every_gpu})
    ->Iterations(1)->UseManualTime()->Unit(benchmark::kSecond);
BENCHMARK_CAPTURE(BM_FullRank, v3_16k, FullCase{"deepseek-v3-2048xh800.json", kV3At16k})->Iterations(1)->UseManualTime()->Unit(benchmark::kSecond);
BENCHMARK_CAPTURE(BM_FullRank, v3_16k_sampled_routing_stragglers,
                  FullCase{"deepseek-v3-2048xh800.json",
                           {"cluster.nodes=2048", "parallel.dp=1024", "training.global_batch=122880", "training.moe_imbalance=sampled", kStragglers}})
    ->Iterations(1)->UseManualTime()->Unit(benchmark::kSecond);
BENCHMARK_CAPTURE(BM_FullRank, llama3_405b_16k, FullCase{"llama3-405b-16k-h100.json", {}})->Iterations(1)->UseManualTime()->Unit(benchmark::kSecond);
BENCHMARK_CAPTURE(BM_FullRank, llama3_405b_100k, FullCase{"llama3-405b-100k-h100.json", {}})->Iterations(1)->UseManualTime()->Unit(benchmark::kSecond);
BENCHMARK_CAPTURE(BM_FullRank, llama3_405b_100k_stragglers, FullCase{"llama3-405b-100k-h100.json", {kStragglers}})
    ->Iterations(1)->UseManualTime()->Unit(benchmark::kSecond);
// On Llama 3's RoCE Clos (pods of 3,072 GPUs, 1:7 aggregation, ECMP): every DP ring and pipeline hop as
// flows over the fabric's tiers, solved max-min (about 290K flows), before the step.
BENCHMARK_CAPTURE(BM_FullRank, llama3_405b_100k_roce_clos, FullCase{"llama3-405b-100k-h100.json", {"cluster.fabric=h100-roce-llama3"}})
    ->Iterations(1)->UseManualTime()->Unit(benchmark::kSecond);

}  // namespace
