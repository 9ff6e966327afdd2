#include "models/input/units.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <fmt/format.h>

namespace plumb {
namespace {

struct Unit {
  std::string_view symbol;
  double scale;
};

// Longest symbols first within each table is not needed: matching is exact on the suffix.
constexpr std::array byte_units{
    Unit{"B", 1.0},         Unit{"kB", 1e3},  Unit{"KB", 1e3},  Unit{"MB", 1e6},  Unit{"GB", 1e9},
    Unit{"TB", 1e12},       Unit{"PB", 1e15}, Unit{"KiB", 1024.0}, Unit{"MiB", 1048576.0},
    Unit{"GiB", 1073741824.0}, Unit{"TiB", 1099511627776.0},
};
constexpr std::array bandwidth_units{
    Unit{"B/s", 1.0},    Unit{"kB/s", 1e3},   Unit{"KB/s", 1e3},   Unit{"MB/s", 1e6},
    Unit{"GB/s", 1e9},   Unit{"TB/s", 1e12},  Unit{"KiB/s", 1024.0}, Unit{"MiB/s", 1048576.0},
    Unit{"GiB/s", 1073741824.0},
    Unit{"b/s", 0.125},  Unit{"kb/s", 125.0}, Unit{"Kb/s", 125.0}, Unit{"Mb/s", 1.25e5},
    Unit{"Gb/s", 1.25e8}, Unit{"Tb/s", 1.25e11}, Unit{"bps", 0.125}, Unit{"Gbps", 1.25e8},
};
constexpr std::array time_units{
    Unit{"ps", 1e-12}, Unit{"ns", 1e-9}, Unit{"us", 1e-6}, Unit{"µs", 1e-6}, Unit{"ms", 1e-3},
    Unit{"s", 1.0},    Unit{"min", 60.0}, Unit{"h", 3600.0}, Unit{"d", 86400.0},
};
constexpr std::array flop_units{
    Unit{"FLOP/s", 1.0},    Unit{"GFLOP/s", 1e9},  Unit{"TFLOP/s", 1e12}, Unit{"PFLOP/s", 1e15},
    Unit{"FLOPS", 1.0},     Unit{"GFLOPS", 1e9},   Unit{"TFLOPS", 1e12},  Unit{"PFLOPS", 1e15},
};
constexpr std::array power_units{Unit{"W", 1.0}, Unit{"kW", 1e3}};
// Counts (tokens, parameters): SI-style suffixes as papers print them ("14.8T", "671B").
constexpr std::array count_units{
    Unit{"", 1.0}, Unit{"K", 1e3}, Unit{"M", 1e6}, Unit{"B", 1e9}, Unit{"G", 1e9}, Unit{"T", 1e12},
};

template <std::size_t N>
const Unit* find_unit(const std::array<Unit, N>& table, std::string_view symbol) {
  for (const Unit& u : table)
    if (u.symbol == symbol) return &u;
  return nullptr;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

}  // namespace

std::string_view dimension_name(Dimension d) {
  switch (d) {
    case Dimension::bytes: return "a size";
    case Dimension::bandwidth: return "a bandwidth";
    case Dimension::time: return "a duration";
    case Dimension::flop_rate: return "a compute rate";
    case Dimension::count: return "a count";
    case Dimension::power: return "a power";
  }
  return "a quantity";
}

std::string_view dimension_example(Dimension d) {
  switch (d) {
    case Dimension::bytes: return "\"80GiB\" or \"80GB\"";
    case Dimension::bandwidth: return "\"400GB/s\" (bytes) or \"400Gb/s\" (bits)";
    case Dimension::time: return "\"2us\", \"1.5ms\" or \"3s\"";
    case Dimension::flop_rate: return "\"989.4TFLOP/s\"";
    case Dimension::count: return "\"14.8T\", \"671B\" or a plain number";
    case Dimension::power: return "\"750W\" or \"1kW\"";
  }
  return "";
}

std::optional<double> parse_quantity(std::string_view text, Dimension dim, std::string* why) {
  auto fail = [&](std::string message) -> std::optional<double> {
    if (why) *why = std::move(message);
    return std::nullopt;
  };
  std::string_view s = trim(text);
  double value = 0.0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc{} || end == s.data())
    return fail(fmt::format("\"{}\" does not start with a number; expected {} such as {}", text,
                            dimension_name(dim), dimension_example(dim)));
  if (!std::isfinite(value)) return fail(fmt::format("\"{}\" is not a finite number", text));
  std::string_view symbol = trim(s.substr(static_cast<std::size_t>(end - s.data())));
  const Unit* unit = nullptr;
  switch (dim) {
    case Dimension::bytes: unit = find_unit(byte_units, symbol); break;
    case Dimension::bandwidth: unit = find_unit(bandwidth_units, symbol); break;
    case Dimension::time: unit = find_unit(time_units, symbol); break;
    case Dimension::flop_rate: unit = find_unit(flop_units, symbol); break;
    case Dimension::count: unit = find_unit(count_units, symbol); break;
    case Dimension::power: unit = find_unit(power_units, symbol); break;
  }
  if (!unit) {
    if (symbol.empty())
      return fail(fmt::format("\"{}\" has no unit; expected {} such as {}", text, dimension_name(dim),
                              dimension_example(dim)));
    return fail(fmt::format("unknown unit \"{}\" in \"{}\"; expected {} such as {}", symbol, text,
                            dimension_name(dim), dimension_example(dim)));
  }
  double result = value * unit->scale;
  if (!std::isfinite(result)) return fail(fmt::format("\"{}\" is too large", text));
  return result;
}

std::string format_bytes(double bytes) {
  constexpr std::array<std::string_view, 5> names{"B", "KiB", "MiB", "GiB", "TiB"};
  double v = bytes;
  std::size_t i = 0;
  while (std::fabs(v) >= 1024.0 && i + 1 < names.size()) {
    v /= 1024.0;
    ++i;
  }
  return i == 0 ? fmt::format("{:.0f} B", v) : fmt::format("{:.1f} {}", v, names[i]);
}

std::string format_count(double count) {
  constexpr std::array<std::pair<double, std::string_view>, 4> steps{
      {{1e12, "T"}, {1e9, "B"}, {1e6, "M"}, {1e3, "K"}}};
  for (auto [scale, suffix] : steps)
    if (std::fabs(count) >= scale) return fmt::format("{:.2f}{}", count / scale, suffix);
  return fmt::format("{:.0f}", count);
}

std::string format_seconds(double seconds) {
  if (seconds >= 86400.0) return fmt::format("{:.2f} d", seconds / 86400.0);
  if (seconds >= 3600.0) return fmt::format("{:.2f} h", seconds / 3600.0);
  if (seconds >= 1.0) return fmt::format("{:.3f} s", seconds);
  if (seconds >= 1e-3) return fmt::format("{:.3f} ms", seconds * 1e3);
  return fmt::format("{:.3f} us", seconds * 1e6);
}

}  // namespace plumb
