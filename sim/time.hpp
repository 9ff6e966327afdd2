#pragma once
// Simulated time is an integer number of picoseconds, so runs are deterministic and bit-identical.
#include <cmath>
#include <cstdint>
#include <limits>

namespace plumb::sim {

using Time = std::int64_t;  // picoseconds

inline constexpr Time kPicosPerSecond = 1'000'000'000'000;
inline constexpr Time kNever = std::numeric_limits<Time>::max();

// The one conversion between seconds and engine time, both ways.
inline constexpr double kSecondsPerPico = 1e-12;
// Rounds up, so that work is never finished early (the engine's own transfers).
inline Time from_seconds(double seconds) { return static_cast<Time>(std::ceil(seconds * static_cast<double>(kPicosPerSecond))); }
// Rounds to the nearest picosecond: a duration a cost model priced, as a task's work.
inline Time nearest_time(double seconds) { return static_cast<Time>(std::llround(seconds * static_cast<double>(kPicosPerSecond))); }
inline double to_seconds(Time t) { return static_cast<double>(t) * kSecondsPerPico; }
inline double to_micros(Time t) { return static_cast<double>(t) * 1e-6; }

}  // namespace plumb::sim
