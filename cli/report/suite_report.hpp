#pragma once
// `plumb validate` output: the published suite's cases, predicted against measured, the error summaries
// per publication, and the breakdown of the worst cases' steps — as text, JSON and CSV.
#include <string>

#include "models/input/json_reader.hpp"
#include "validate/published/suite.hpp"

namespace plumb {

// `worst` cases get their step's breakdown printed after the table.
std::string suite_text(const SuiteResult& r, std::size_t worst = 5);
Json suite_json(const SuiteResult& r);
// One row per case and metric: case,group,metric,measured,predicted,error.
std::string suite_csv(const SuiteResult& r);

}  // namespace plumb
