#pragma once
// The part of TOML that training configs use (torchtitan's train_configs): [section] and
// [dotted.section] headers, key = value lines with strings, booleans, integers, floats and one-line
// arrays of those, and # comments. Read into JSON objects, a section per nested object.
#include <string>

#include "models/input/json_reader.hpp"

namespace plumb {

// Throws InputError naming the file and line of anything outside that subset or malformed.
Json parse_toml_subset(const std::string& text, const std::string& file);

}  // namespace plumb
