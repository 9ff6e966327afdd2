// Engine speed: task events per second on large synthetic graphs and state bytes per task; flow-level
// network cost per max-min rate update for 10,000 flows on a 1,024-GPU fat tree and a 256-GPU
// all-to-all.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include "sim/engine.hpp"

namespace {

using namespace plumb::sim;

// Engine state per task beyond the graph: start, end, binding, last dependency, pending count, version.
constexpr double kEngineBytesPerTask = 32;  // TaskState in sim/engine.cpp

Machine gpus(int count, int streams_per_gpu) {
  Machine m;
  for (int g = 0; g < count; ++g) {
    std::int32_t gpu = m.add_gpu(fmt::format("gpu{}", g), 132);
    for (int s = 0; s < streams_per_gpu; ++s) m.add_stream(gpu, fmt::format("s{}", s));
  }
  return m;
}

void report(benchmark::State& state, const TaskGraph& g, std::uint64_t events) {
  state.counters["events/s"] = benchmark::Counter(static_cast<double>(events) * static_cast<double>(state.iterations()),
                                                  benchmark::Counter::kIsRate);
  state.counters["tasks"] = static_cast<double>(g.size());
  state.counters["bytes/task"] = g.bytes_per_task() + kEngineBytesPerTask;
}

// 1M tasks: 128 streams on 64 GPUs, each a chain of compute tasks, with a dependency on another
// stream's chain every 16 tasks, as pipeline stages hand work on. `sharing` makes every other task
// share its GPU's SMs with the GPU's other stream (so speeds change as neighbours start and stop).
void chains(benchmark::State& state, bool sharing) {
  const int n = static_cast<int>(state.range(0)), streams = 128;
  Machine m = gpus(64, 2);
  TaskGraph g;
  std::vector<TaskId> last(streams, kNoTask);
  for (int i = 0; i < n; ++i) {
    int s = i % streams;
    bool shares = sharing && (i / streams) % 2 == 0;
    TaskId t = g.add_compute("op", s, 1000 + i % 7, shares ? 0 : 8);
    if (last[static_cast<std::size_t>(s)] != kNoTask) g.add_dependency(last[static_cast<std::size_t>(s)], t);
    if (i % 16 == 0 && i >= streams) g.add_dependency(last[static_cast<std::size_t>((s + 2) % streams)], t);
    last[static_cast<std::size_t>(s)] = t;
  }
  g.finalize();
  std::uint64_t events = 0;
  for (auto _ : state) events = simulate(g, m).events;
  report(state, g, events);
}
void BM_Chains(benchmark::State& state) { chains(state, false); }
void BM_ChainsSharingSms(benchmark::State& state) { chains(state, true); }
BENCHMARK(BM_Chains)->Arg(10'000)->Arg(100'000)->Arg(1'000'000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ChainsSharingSms)->Arg(1'000'000)->Unit(benchmark::kMillisecond);

// 1M tasks in rounds: one marker fans out to 999 compute tasks over 64 streams, which fan back in.
void BM_FanOutFanIn(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0)), width = 999, streams = 64;
  Machine m = gpus(64, 1);
  TaskGraph g;
  TaskId join = g.add_marker("start");
  for (int done = 1; done + width + 1 <= n;) {
    TaskId next = g.add_marker("join");
    for (int k = 0; k < width; ++k) {
      TaskId t = g.add_compute("work", k % streams, 500 + k % 11, 4);
      g.add_dependency(join, t);
      g.add_dependency(t, next);
    }
    // The join must come after its fan-in on no stream: it is a marker.
    join = next;
    done += width + 1;
  }
  g.finalize();
  std::uint64_t events = 0;
  for (auto _ : state) events = simulate(g, m).events;
  report(state, g, events);
}
BENCHMARK(BM_FanOutFanIn)->Arg(1'000'000)->Unit(benchmark::kMillisecond);

// Flows all started together on a rail-optimized fat tree of 8-GPU nodes (50 GB/s NICs, 32 nodes
// per leaf): `pairs` (sender, receiver) transfers.
void run_flows(benchmark::State& state, int nodes, const std::vector<std::pair<int, int>>& pairs, const std::vector<double>& bytes = {}) {
  NodeShape node{8, 450e9, 1'000'000};
  FabricShape fabric;
  fabric.nic_bandwidth = 50e9;
  fabric.nic_latency = 1'000'000;
  fabric.switch_latency = 1'000'000;
  Topology t = rail_optimized_fat_tree(nodes, node, fabric);
  Machine m;
  for (int g = 0; g < nodes * 8; ++g) m.add_stream(m.add_gpu("gpu", 132, t.gpus()[static_cast<std::size_t>(g)]), "comm");
  TaskGraph g;
  // Each sender's transfers go on its one stream in order; give each flow its own stream so all run at once.
  Machine wide;
  for (int i = 0; i < nodes * 8; ++i) wide.add_gpu(fmt::format("gpu{}", i), 132, t.gpus()[static_cast<std::size_t>(i)]);
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    const auto [src, dst] = pairs[i];
    StreamId s = wide.add_stream(src, "flow");
    g.add_transfer("flow", s, t.gpus()[static_cast<std::size_t>(src)], t.gpus()[static_cast<std::size_t>(dst)], bytes.empty() ? 64e6 : bytes[i]);
  }
  g.finalize();
  SimResult r;
  for (auto _ : state) r = simulate(g, wide, &t);
  state.counters["flows"] = static_cast<double>(pairs.size());
  state.counters["rate updates"] = static_cast<double>(r.rate_updates);
  state.counters["us/update"] = benchmark::Counter(static_cast<double>(r.rate_updates) * static_cast<double>(state.iterations()),
                                                   benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["makespan ms"] = to_seconds(r.makespan) * 1e3;
  state.counters["refilled/update"] = r.rate_updates > 0 ? static_cast<double>(r.flows_refilled) / static_cast<double>(r.rate_updates) : 0;
}

void BM_Flows10kOn1024Gpus(benchmark::State& state) {
  std::vector<std::pair<int, int>> pairs;
  std::uint64_t x = 12345;
  for (int i = 0; i < 10'000; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    int src = i % 1024, dst = static_cast<int>((x >> 33) % 1023);
    pairs.emplace_back(src, dst >= src ? dst + 1 : dst);
  }
  run_flows(state, 128, pairs);
}
BENCHMARK(BM_Flows10kOn1024Gpus)->Unit(benchmark::kMillisecond)->Iterations(1);

// An all-to-all over N GPUs (N/8 nodes): 256 GPUs 65,280 flows; 320 GPUs 102,080 concurrent flows.
void BM_AllToAll(benchmark::State& state) {
  const auto n = static_cast<int>(state.range(0));
  std::vector<std::pair<int, int>> pairs;
  for (int s = 0; s < n; ++s)
    for (int d = 0; d < n; ++d)
      if (s != d) pairs.emplace_back(s, d);
  run_flows(state, n / 8, pairs);
}
BENCHMARK(BM_AllToAll)->Arg(256)->Arg(320)->Unit(benchmark::kMillisecond)->Iterations(1);

// Concurrent flows of random pairs and sizes (1–64 MB) on 1,024 GPUs: nearly every flow ends at
// its own instant, so the network re-shares about once per flow (issue 28's target: ≤ 10 s in all).
void BM_RandomFlowsOn1024Gpus(benchmark::State& state) {
  std::vector<std::pair<int, int>> pairs;
  std::vector<double> bytes;
  std::uint64_t x = 12345;
  for (std::int64_t i = 0; i < state.range(0); ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    int src = static_cast<int>(i % 1024), dst = static_cast<int>((x >> 33) % 1023);
    pairs.emplace_back(src, dst >= src ? dst + 1 : dst);
    bytes.push_back(1e6 + static_cast<double>((x >> 13) % 63'000'000));
  }
  run_flows(state, 128, pairs, bytes);
}
BENCHMARK(BM_RandomFlowsOn1024Gpus)->Arg(10'000)->Arg(30'000)->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace
