#include "cli/report/suite_report.hpp"

#include <algorithm>
#include <fmt/format.h>

namespace plumb {
namespace {

// A metric's value in the unit a person reads it in.
std::string shown(Metric m, double v) {
  switch (m) {
    case Metric::step_time: return v < 1 ? fmt::format("{:.1f} ms", v * 1e3) : fmt::format("{:.3f} s", v);
    case Metric::tokens_per_s_per_gpu: return fmt::format("{:.1f} tok/s", v);
    case Metric::model_tflops_per_gpu:
    case Metric::hardware_tflops_per_gpu: return fmt::format("{:.1f} TFLOP/s", v / kTera);
    case Metric::mfu: return fmt::format("{:.1f}%", v * 100);
    default: return fmt::format("{:.2f} GiB", v / (1024.0 * 1024.0 * 1024.0));
  }
}

constexpr const char* kClassNames[] = {"GEMM", "attention", "memory-bound"};

std::string breakdown_text(const CaseResult& c) {
  const StepBreakdown& b = *c.breakdown;
  auto ms = [](double s) { return fmt::format("{:.1f} ms", s * 1e3); };
  std::string out = fmt::format("  {} (step {}; its busiest pipeline rank):\n", c.id, ms(b.step_time));
  out += fmt::format("    compute {}:", ms(b.compute));
  for (std::size_t i = 0; i < b.compute_by_class.size(); ++i) out += fmt::format(" {} {}", kClassNames[i], ms(b.compute_by_class[i]));
  if (b.kernel_overhead > 0) out += fmt::format(" (kernel launches {})", ms(b.kernel_overhead));
  if (b.host_wait > 0) out += fmt::format(" waiting on the host {}", ms(b.host_wait));
  out += "\n    exposed communication:";
  for (std::size_t k = 0; k < kCommKinds; ++k)
    out += fmt::format(" {} {}", comm_kind_name(static_cast<CommKind>(k)), ms(b.exposed[k]));
  out += fmt::format("\n    bubble {}\n", ms(b.bubble));
  return out;
}

}  // namespace

std::string suite_text(const SuiteResult& r, std::size_t worst) {
  std::size_t width = 4;
  for (const CaseResult& c : r.cases) width = std::max(width, c.id.size());
  std::string out = fmt::format("{:<{}}  {:<24} {:>16} {:>16} {:>8}\n", "case", width, "metric", "measured", "predicted", "error");
  for (const CaseResult& c : r.cases) {
    if (!c.failure.empty()) {
      out += fmt::format("{:<{}}  not simulated: {}\n", c.id, width, c.failure);
      continue;
    }
    for (const MetricResult& m : c.metrics)
      out += fmt::format("{:<{}}  {:<24} {:>16} {:>16} {:>+7.1f}%{}\n", c.id, width, metric_name(m.metric), shown(m.metric, m.measured),
                         shown(m.metric, m.predicted), 100 * m.error(), c.fits ? "" : "  (plumb: does not fit)");
  }
  std::size_t group_width = 5;
  for (const ErrorSummary& s : r.summaries) group_width = std::max(group_width, s.group.size());
  out += fmt::format("\n{:<{}} {:<7} {:>5} {:>8} {:>8} {:>8}  {}\n", "group", group_width, "metrics", "n", "MAPE", "median", "max",
                     "worst case");
  for (const ErrorSummary& s : r.summaries)
    out += fmt::format("{:<{}} {:<7} {:>5} {:>7.1f}% {:>7.1f}% {:>7.1f}%  {}\n", s.group, group_width, s.memory ? "memory" : "time",
                       s.count, 100 * s.mape, 100 * s.median, 100 * s.max, s.worst_case);
  std::string worst_text;
  std::size_t shown_cases = 0;
  for (const CaseResult& c : r.cases) {
    if (shown_cases == worst) break;
    if (!c.breakdown) continue;
    worst_text += breakdown_text(c);
    ++shown_cases;
  }
  if (!worst_text.empty()) out += fmt::format("\nwhere the step went in the {} worst cases:\n", shown_cases) + worst_text;
  return out;
}

Json suite_json(const SuiteResult& r) {
  Json cases = Json::array(), summaries = Json::array();
  for (const CaseResult& c : r.cases) {
    Json metrics = Json::array();
    for (const MetricResult& m : c.metrics)
      metrics.push_back({{"metric", std::string(metric_name(m.metric))}, {"measured", m.measured}, {"predicted", m.predicted}, {"error", m.error()}});
    Json j = {{"case", c.id}, {"group", c.group}, {"file", c.file}, {"fits", c.fits}, {"metrics", metrics}};
    if (!c.failure.empty()) j["failure"] = c.failure;
    if (c.breakdown) {
      const StepBreakdown& b = *c.breakdown;
      Json exposed = Json::object();
      for (std::size_t k = 0; k < kCommKinds; ++k) exposed[std::string(comm_kind_name(static_cast<CommKind>(k)))] = b.exposed[k];
      j["breakdown"] = {{"step_time_s", b.step_time}, {"compute_s", b.compute},
                        {"gemm_s", b.compute_by_class[0]}, {"attention_s", b.compute_by_class[1]},
                        {"memory_bound_s", b.compute_by_class[2]}, {"kernel_overhead_s", b.kernel_overhead}, {"host_wait_s", b.host_wait},
                        {"exposed_s", exposed}, {"bubble_s", b.bubble}};
    }
    cases.push_back(j);
  }
  for (const ErrorSummary& s : r.summaries)
    summaries.push_back({{"group", s.group}, {"metrics", s.memory ? "memory" : "time"}, {"count", s.count}, {"mape", s.mape},
                         {"median", s.median}, {"max", s.max}, {"worst_case", s.worst_case}});
  return {{"cases", cases}, {"summaries", summaries}};
}

std::string suite_csv(const SuiteResult& r) {
  std::string out = "case,group,metric,measured,predicted,error\n";
  for (const CaseResult& c : r.cases)
    for (const MetricResult& m : c.metrics)
      out += fmt::format("{},{},{},{:.9g},{:.9g},{:.6f}\n", c.id, c.group, metric_name(m.metric), m.measured, m.predicted, m.error());
  return out;
}

namespace {

std::string error_or_dash(const std::optional<double>& e) { return e ? fmt::format("{:+.1f}%", 100 * *e) : std::string("-"); }
std::string percent_or_dash(const std::optional<ErrorSummary>& s, double ErrorSummary::*field) {
  return s ? fmt::format("{:.1f}%", 100 * ((*s).*field)) : std::string("-");
}

}  // namespace

std::string baseline_text(const BaselineComparison& c, const std::string& file) {
  std::string out = fmt::format("\nagainst the baseline {}: {} metric{} moved\n", file, c.moved.size(), c.moved.size() == 1 ? "" : "s");
  std::size_t width = 4;
  for (const MetricChange& m : c.moved) width = std::max(width, m.case_id.size());
  if (!c.moved.empty())
    out += fmt::format("{:<{}}  {:<24} {:>8} {:>8} {:>8}\n", "case", width, "metric", "before", "after", "moved");
  for (const MetricChange& m : c.moved)
    out += fmt::format("{:<{}}  {:<24} {:>8} {:>8} {:>8}\n", m.case_id, width, metric_name(m.metric), error_or_dash(m.before),
                       error_or_dash(m.after), m.before && m.after ? fmt::format("{:+.1f}", 100 * (*m.after - *m.before)) : "new/gone");
  std::size_t group_width = 5;
  for (const SummaryChange& s : c.summaries) group_width = std::max(group_width, s.group.size());
  out += fmt::format("\n{:<{}} {:<7} {:>14} {:>16} {:>16}\n", "group", group_width, "metrics", "n before→after", "MAPE before→after",
                     "max before→after");
  for (const SummaryChange& s : c.summaries) {
    const std::string n = fmt::format("{}→{}", s.before ? std::to_string(s.before->count) : "-", s.after ? std::to_string(s.after->count) : "-");
    out += fmt::format("{:<{}} {:<7} {:>14} {:>16} {:>16}\n", s.group, group_width, s.memory ? "memory" : "time", n,
                       percent_or_dash(s.before, &ErrorSummary::mape) + "→" + percent_or_dash(s.after, &ErrorSummary::mape),
                       percent_or_dash(s.before, &ErrorSummary::max) + "→" + percent_or_dash(s.after, &ErrorSummary::max));
  }
  return out;
}

Json baseline_json(const BaselineComparison& c, const std::string& file) {
  auto value = [](const std::optional<double>& e) { return e ? Json(*e) : Json(nullptr); };
  auto summary = [](const std::optional<ErrorSummary>& s) {
    return s ? Json{{"count", s->count}, {"mape", s->mape}, {"median", s->median}, {"max", s->max}, {"worst_case", s->worst_case}} : Json(nullptr);
  };
  Json moved = Json::array(), summaries = Json::array();
  for (const MetricChange& m : c.moved)
    moved.push_back({{"case", m.case_id}, {"group", m.group}, {"metric", std::string(metric_name(m.metric))}, {"before", value(m.before)},
                     {"after", value(m.after)}});
  for (const SummaryChange& s : c.summaries)
    summaries.push_back({{"group", s.group}, {"metrics", s.memory ? "memory" : "time"}, {"before", summary(s.before)}, {"after", summary(s.after)}});
  return {{"file", file}, {"moved", moved}, {"summaries", summaries}};
}

}  // namespace plumb
