#pragma once
// `plumb ops`: every op of one layer per pipeline stage with FLOPs, bytes, roofline time and bound.
#include <string>

#include "models/scenario/job.hpp"
#include "models/input/json_reader.hpp"

namespace plumb {

Json ops_report_json(const Job& job);
std::string ops_report_table(const Job& job);

}  // namespace plumb
