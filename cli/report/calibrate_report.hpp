#pragma once
// `plumb calibrate` output: each fitted term with its residual and support, as text and as JSON.
#include <string>

#include "models/input/json_reader.hpp"
#include "validate/calibrate/calibrate.hpp"
#include "validate/calibrate/clock_fit.hpp"
#include "validate/run/trace_calibrate.hpp"

namespace plumb {

std::string calibration_report(const Calibration& c);
Json calibration_json(const Calibration& c);
// plumb calibrate --clock: the settled clock over the profile's, its support, and the scales before and after.
std::string clock_fit_report(const ClockFit& f, const std::string& profile);
Json clock_fit_json(const ClockFit& f);
// plumb calibrate --trace: each fitted figure with the trace's time, plumb's before and after, and the span.
std::string trace_calibration_report(const TraceCalibration& c);
Json trace_calibration_json(const TraceCalibration& c);

}  // namespace plumb
