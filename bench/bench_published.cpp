// The published suite end to end (80 cases: read, simulate, summarise): how long `plumb validate` takes,
// and, printed once before the timings, its full table — predicted against measured per case and metric,
// the error summaries per publication and the worst cases' breakdown.
#include <benchmark/benchmark.h>
#include <cstdio>

#include "cli/report/suite_report.hpp"

namespace {

void BM_PublishedSuite(benchmark::State& state) {
  std::vector<plumb::PublishedCase> cases;
  for (const auto& f : plumb::case_files({plumb::published_dir().string()})) cases.push_back(plumb::read_case(f));
  static bool printed = false;
  plumb::SuiteResult result;
  for (auto _ : state) result = plumb::run_suite(cases);
  if (!printed) {
    std::fputs(plumb::suite_text(result).c_str(), stdout);
    printed = true;
  }
  for (const plumb::ErrorSummary& s : result.summaries)
    if (s.group == "all") state.counters[s.memory ? "memory_MAPE_%" : "time_MAPE_%"] = 100 * s.mape;
  state.counters["cases"] = static_cast<double>(cases.size());
}
BENCHMARK(BM_PublishedSuite)->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace
