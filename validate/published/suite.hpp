#pragma once
// The published suite run: each case's scenario simulated as `plumb run` does, its prediction set
// beside what was measured, and the errors summarised per publication and per kind of metric.
#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "models/step/step_summary.hpp"
#include "validate/published/published_case.hpp"

namespace plumb {

struct MetricResult {
  Metric metric;
  double measured = 0, predicted = 0;
  double error() const { return predicted / measured - 1.0; }  // signed, relative to the measurement
};

// Where the step's time went on its busiest pipeline rank, to show what a miss is made of.
struct StepBreakdown {
  double step_time = 0;
  double compute = 0;                         // seconds on the compute stream
  std::array<double, 3> compute_by_class{};   // GEMM, attention, memory-bound (OpClass order)
  std::array<double, kCommKinds> exposed{};   // communication not hidden under compute, per kind
  double bubble = 0;                          // idle
  double kernel_overhead = 0;                 // launch cost inside compute (the GPU profile's per-kernel cost)
  double host_wait = 0;                       // inside compute, the GPU waiting on the host (training.host_overhead)
};

struct CaseResult {
  std::string id, group, file;
  std::vector<MetricResult> metrics;
  std::optional<StepBreakdown> breakdown;
  bool fits = true;
  std::string failure;  // the case could not be simulated (its schedule cannot be built, …)
  double worst() const;  // largest |error| over its metrics
};

struct ErrorSummary {
  std::string group;  // a publication, or "all"
  bool memory = false;
  std::size_t count = 0;
  double mape = 0, median = 0, max = 0;
  std::string worst_case;
};

struct SuiteResult {
  std::vector<CaseResult> cases;       // worst first
  std::vector<ErrorSummary> summaries; // per group and kind, then "all", worst MAPE first within each
};

// Runs every case (calling `progress` after each with how many are done); cases whose simulation
// fails are reported with their error rather than stopping the suite.
SuiteResult run_suite(const std::vector<PublishedCase>& cases,
                      const std::function<void(std::uint64_t done, std::uint64_t total)>& progress = {});
CaseResult run_case(const PublishedCase& c);
// The error summaries of `cases`: per group and kind of metric, then over all, worst MAPE first.
std::vector<ErrorSummary> summarize_suite(const std::vector<CaseResult>& cases);

}  // namespace plumb
