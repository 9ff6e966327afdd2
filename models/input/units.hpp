#pragma once
// Quantities written with explicit units in scenario and profile files.
// Bits and bytes, and decimal (kB, GB) and binary (KiB, GiB) prefixes, are kept apart:
// "400Gb/s" is 50e9 bytes/s, "80GiB" is 80·2^30 bytes, "80GB" is 80e9 bytes.
#include <optional>
#include <string>
#include <string_view>

namespace plumb {

enum class Dimension { bytes, bandwidth, time, flop_rate, count, power };

// 10¹²: TFLOP/s ↔ FLOP/s, and tokens per trillion.
inline constexpr double kTera = 1e12;

std::string_view dimension_name(Dimension d);
// What a valid value of this dimension looks like, for error messages.
std::string_view dimension_example(Dimension d);

// Parses "80GiB", "400Gb/s", "2us", "989.4TFLOP/s", "14.8T", "750W" into base units
// (bytes, bytes/s, seconds, FLOP/s, plain count, watts). Returns nullopt with `why` set on failure.
std::optional<double> parse_quantity(std::string_view text, Dimension dim, std::string* why = nullptr);

// Human-readable rendering in base units with a sensible prefix: 7.1e10 bytes → "66.1 GiB".
std::string format_bytes(double bytes);
std::string format_count(double count);   // 6.71e11 → "671.0B"
std::string format_seconds(double seconds);

}  // namespace plumb
