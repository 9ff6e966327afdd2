#pragma once
// `plumb run` output: the step summary as JSON and as the table a user reads.
#include <string>

#include "models/input/json_reader.hpp"
#include "models/step/step_summary.hpp"

namespace plumb {

Json step_report_json(const Job& job, const StepReport& r);
std::string step_report_table(const Job& job, const StepReport& r);

}  // namespace plumb
