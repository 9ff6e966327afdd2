#pragma once
// `plumb calibrate` output: each fitted term with its residual and support, as text and as JSON.
#include <string>

#include "models/input/json_reader.hpp"
#include "validate/calibrate/calibrate.hpp"

namespace plumb {

std::string calibration_report(const Calibration& c);
Json calibration_json(const Calibration& c);

}  // namespace plumb
