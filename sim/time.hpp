#pragma once
// Simulated time is an integer number of picoseconds, so runs are deterministic and bit-identical.
#include <cmath>
#include <cstdint>
#include <limits>

namespace plumb::sim {

using Time = std::int64_t;  // picoseconds

inline constexpr Time kPicosPerSecond = 1'000'000'000'000;
inline constexpr Time kNever = std::numeric_limits<Time>::max();

// Rounds up, so that work is never finished early.
inline Time from_seconds(double seconds) { return static_cast<Time>(std::ceil(seconds * 1e12)); }
inline double to_seconds(Time t) { return static_cast<double>(t) * 1e-12; }
inline double to_micros(Time t) { return static_cast<double>(t) * 1e-6; }

}  // namespace plumb::sim
