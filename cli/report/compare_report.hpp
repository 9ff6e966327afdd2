#pragma once
// `plumb compare` output: a measured run beside plumb's prediction, as the table a user reads and as JSON.
#include <string>

#include "models/input/json_reader.hpp"
#include "validate/run/compare.hpp"

namespace plumb {

std::string comparison_text(const Comparison& c);
Json comparison_json(const Comparison& c);

}  // namespace plumb
