#pragma once
// `plumb validate` output: the published suite's cases, predicted against measured, the error summaries
// per publication, and the breakdown of the worst cases' steps — as text, JSON and CSV.
#include <string>

#include "models/input/json_reader.hpp"
#include "validate/published/baseline.hpp"
#include "validate/published/suite.hpp"

namespace plumb {

// `worst` cases get their step's breakdown printed after the table.
std::string suite_text(const SuiteResult& r, std::size_t worst = 5);
Json suite_json(const SuiteResult& r);
// One row per case and metric: case,group,metric,measured,predicted,error.
std::string suite_csv(const SuiteResult& r);
// This run against a baseline `--csv` file (`file` as the user named it): the metrics that moved, then each
// publication's MAPE, largest error and count before and after.
std::string baseline_text(const BaselineComparison& c, const std::string& file);
Json baseline_json(const BaselineComparison& c, const std::string& file);

}  // namespace plumb
