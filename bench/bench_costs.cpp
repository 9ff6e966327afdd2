// How fast the cost models answer, since the planner asks them per candidate layout.
#include <benchmark/benchmark.h>

#include "models/costs/collective.hpp"
#include "models/costs/flops.hpp"
#include "models/hardware/hardware.hpp"
#include "models/spec/model_reader.hpp"

namespace {

using namespace plumb;

void BM_CollectiveAuto(benchmark::State& state) {
  CollectiveLinks links;
  links.nvlink = 370e9;
  links.network = 46e9;
  links.nvls_algbw = 275e9;
  double bytes = 1 << 20;
  for (auto _ : state) {
    benchmark::DoNotOptimize(collective_cost(CollectiveOp::all_reduce, bytes, {64, 8}, links));
    bytes = bytes < 8e9 ? bytes * 2 : 8.0;
  }
  state.counters["costs/s"] = benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_CollectiveAuto);

void BM_ModelFlopsPerToken(benchmark::State& state) {
  Diagnostics d;
  SourceFile src{"bench", ".", &d, {}};
  ModelSpec m = *read_model(Json("deepseek-v3"), "", src);
  for (auto _ : state) benchmark::DoNotOptimize(model_flops_per_token(m, 4096));
  state.counters["models/s"] = benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_ModelFlopsPerToken)->Unit(benchmark::kMicrosecond);

}  // namespace
