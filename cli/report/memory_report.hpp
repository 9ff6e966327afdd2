#pragma once
// `plumb memory` output: machine-readable JSON and a table readable at a glance.
#include <string>

#include "models/input/json_reader.hpp"
#include "models/memory/memory.hpp"

namespace plumb {

Json memory_report_json(const Job& job, const MemoryPlan& plan);
std::string memory_report_table(const Job& job, const MemoryPlan& plan);

}  // namespace plumb
