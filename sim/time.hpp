#pragma once
// Simulated time is an integer number of picoseconds, so runs are deterministic and bit-identical.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "sim/limits.hpp"

namespace plumb::sim {

using Time = std::int64_t;  // picoseconds

inline constexpr Time kPicosPerSecond = 1'000'000'000'000;
inline constexpr Time kNever = std::numeric_limits<Time>::max();

// The clock holds 2^63 ps = 106 days. A duration beyond half of that (or negative, or not a number) is
// refused, and so is an instant past the end: the inputs asked for more than plumb can simulate.
// Commands report it as bad input, naming the file.
struct TimeRangeError : LimitError {
  using LimitError::LimitError;
};
inline constexpr double kMaxDurationSeconds = 4.6e6;
inline void check_duration(double seconds, const char* what) {
  if (!(seconds >= 0) || seconds > kMaxDurationSeconds)
    throw TimeRangeError(std::string(what) + " of " + std::to_string(seconds) +
                         " s is beyond the simulator's clock (durations from 0 to 4.6e6 s, steps up to 106 days in integer "
                         "picoseconds): the model, sequence or batch sizes are too large for one step, or a profile's rate is zero");
}
// An instant `d` after `now`; past the clock's end, TimeRangeError.
inline Time later(Time now, Time d) {
  if (d > kNever - 1 - now)
    throw TimeRangeError("the step runs past the simulator's clock (106 days in integer picoseconds): fewer micro-batches per step "
                         "or smaller sizes");
  return now + d;
}

// The one conversion between seconds and engine time, both ways.
inline constexpr double kSecondsPerPico = 1e-12;
// Rounds up, so that work is never finished early (the engine's own transfers).
inline Time from_seconds(double seconds) {
  check_duration(seconds, "a transfer");
  return static_cast<Time>(std::ceil(seconds * static_cast<double>(kPicosPerSecond)));
}
// Rounds to the nearest picosecond: a duration a cost model priced, as a task's work.
inline Time nearest_time(double seconds) {
  check_duration(seconds, "an op");
  return static_cast<Time>(std::llround(seconds * static_cast<double>(kPicosPerSecond)));
}
inline double to_seconds(Time t) { return static_cast<double>(t) * kSecondsPerPico; }
inline double to_micros(Time t) { return static_cast<double>(t) * 1e-6; }

}  // namespace plumb::sim
