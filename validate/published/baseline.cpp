#include "validate/published/baseline.hpp"

#include <algorithm>
#include <charconv>
#include <limits>
#include <cmath>
#include <fmt/format.h>
#include <map>
#include <string_view>

#include "models/input/diagnostics.hpp"

namespace plumb {
namespace {

constexpr std::string_view kHeader = "case,group,metric,measured,predicted,error";

std::vector<std::string_view> fields_of(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = line.find(',', start);
    out.push_back(line.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    if (comma == std::string_view::npos) return out;
    start = comma + 1;
  }
}

std::optional<double> number(std::string_view s) {
  double v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

using Key = std::pair<std::string, Metric>;

std::map<Key, std::pair<std::string, double>> errors_of(const std::vector<CaseResult>& cases) {
  std::map<Key, std::pair<std::string, double>> out;
  for (const CaseResult& c : cases)
    for (const MetricResult& m : c.metrics) out[{c.id, m.metric}] = {c.group, m.error()};
  return out;
}

}  // namespace

std::vector<CaseResult> read_suite_csv(const std::string& text, const std::string& file) {
  auto fail = [&](std::size_t line, const std::string& message) {
    throw InputError({Diagnostic{file, fmt::format("line {}", line), message}});
  };
  std::vector<CaseResult> out;
  std::map<std::string, std::size_t> index;
  std::size_t line_no = 0, start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + start, end - start);
    start = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line_no == 1) {
      if (line != kHeader)
        fail(1, fmt::format("not a plumb validate --csv file: its header should read \"{}\" (write one with plumb validate --csv FILE)", kHeader));
      continue;
    }
    if (line.empty()) continue;
    const std::vector<std::string_view> f = fields_of(line);
    if (f.size() != 6) fail(line_no, fmt::format("{} fields where the header has 6", f.size()));
    if (f[0].empty()) fail(line_no, "the case is empty");
    const std::optional<Metric> metric = metric_named(f[2]);
    if (!metric) fail(line_no, fmt::format("unknown metric \"{}\"", f[2]));
    const std::optional<double> measured = number(f[3]), predicted = number(f[4]);
    if (!measured || *measured == 0 || !predicted)
      fail(line_no, "measured and predicted must be numbers, the measured one not zero");
    auto [it, fresh] = index.try_emplace(std::string(f[0]), out.size());
    if (fresh) out.push_back(CaseResult{std::string(f[0]), std::string(f[1]), "", {}, std::nullopt, true, ""});
    CaseResult& c = out[it->second];
    for (const MetricResult& m : c.metrics)
      if (m.metric == *metric) fail(line_no, fmt::format("case {} has a second {} row", c.id, f[2]));
    c.metrics.push_back({*metric, *measured, *predicted});
  }
  if (line_no == 0) fail(1, "the file is empty; write one with plumb validate --csv FILE");
  return out;
}

BaselineComparison compare_to_baseline(const SuiteResult& now, const std::vector<CaseResult>& baseline, double threshold) {
  BaselineComparison out;
  const auto before = errors_of(baseline), after = errors_of(now.cases);
  for (const auto& [key, value] : after) {
    const auto b = before.find(key);
    if (b != before.end() && std::abs(value.second - b->second.second) < threshold) continue;
    out.moved.push_back({key.first, value.first, key.second, b == before.end() ? std::nullopt : std::optional(b->second.second), value.second});
  }
  for (const auto& [key, value] : before)
    if (!after.contains(key)) out.moved.push_back({key.first, value.first, key.second, value.second, std::nullopt});
  auto moved_by = [](const MetricChange& c) {
    return c.before && c.after ? std::abs(*c.after - *c.before) : std::numeric_limits<double>::infinity();
  };
  std::stable_sort(out.moved.begin(), out.moved.end(), [&](const MetricChange& a, const MetricChange& b) { return moved_by(a) > moved_by(b); });
  const std::vector<ErrorSummary> old_summaries = summarize_suite(baseline);
  auto find = [](const std::vector<ErrorSummary>& list, const std::string& group, bool memory) -> std::optional<ErrorSummary> {
    for (const ErrorSummary& s : list)
      if (s.group == group && s.memory == memory) return s;
    return std::nullopt;
  };
  for (const ErrorSummary& s : now.summaries) out.summaries.push_back({s.group, s.memory, find(old_summaries, s.group, s.memory), s});
  for (const ErrorSummary& s : old_summaries)
    if (!find(now.summaries, s.group, s.memory)) out.summaries.push_back({s.group, s.memory, s, std::nullopt});
  return out;
}

}  // namespace plumb
