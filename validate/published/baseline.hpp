#pragma once
// A previous `plumb validate --csv` beside this run: which case metrics moved, and each publication's
// errors before and after — what a change to a term, a profile or a calibration did to the suite.
#include <optional>
#include <string>
#include <vector>

#include "validate/published/suite.hpp"

namespace plumb {

// The rows of a `--csv` file (case,group,metric,measured,predicted,error) as case results, one per case
// in the file's order, its metrics' measured and predicted values as written. Throws InputError naming
// `file` and the line of a malformed row.
std::vector<CaseResult> read_suite_csv(const std::string& text, const std::string& file);

// One case metric in either run; `before` or `after` empty where that run does not have it.
struct MetricChange {
  std::string case_id, group;
  Metric metric = Metric::step_time;
  std::optional<double> before, after;  // signed relative errors
};

// A publication's summary (or "all") for one kind of metric in either run.
struct SummaryChange {
  std::string group;
  bool memory = false;
  std::optional<ErrorSummary> before, after;
};

struct BaselineComparison {
  std::vector<MetricChange> moved;       // |after − before| ≥ threshold, or in one run only; largest move first
  std::vector<SummaryChange> summaries;  // every group and kind of either run, as this run orders them
};

// `threshold` is in relative error (0.0005: five hundredths of a percentage point).
BaselineComparison compare_to_baseline(const SuiteResult& now, const std::vector<CaseResult>& baseline, double threshold = 0.0005);

}  // namespace plumb
