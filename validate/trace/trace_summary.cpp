#include "validate/trace/trace_summary.hpp"

#include <algorithm>
#include <limits>
#include <utility>

namespace plumb {

namespace {

using Interval = std::pair<double, double>;

// The union of intervals, as disjoint sorted intervals.
std::vector<Interval> merged(std::vector<Interval> v) {
  std::sort(v.begin(), v.end());
  std::vector<Interval> out;
  for (const Interval& i : v) {
    if (!out.empty() && i.first <= out.back().second) out.back().second = std::max(out.back().second, i.second);
    else out.push_back(i);
  }
  return out;
}

double length(const std::vector<Interval>& v) {
  double sum = 0;
  for (const auto& [a, b] : v) sum += b - a;
  return sum;
}

// Length of the intersection of two unions (both disjoint and sorted).
double intersection(const std::vector<Interval>& x, const std::vector<Interval>& y) {
  double sum = 0;
  std::size_t i = 0, j = 0;
  while (i < x.size() && j < y.size()) {
    const double lo = std::max(x[i].first, y[j].first), hi = std::min(x[i].second, y[j].second);
    if (hi > lo) sum += hi - lo;
    (x[i].second < y[j].second) ? ++i : ++j;
  }
  return sum;
}

}  // namespace

TraceSummary summarize_trace(const GpuTrace& trace, KernelClassifier& classes) {
  TraceSummary s;
  s.file = trace.file;
  s.device_name = trace.device_name;
  s.gpu_events = trace.events.size();
  s.events_seen = trace.events_seen;
  // Each distinct name classified once.
  std::vector<std::optional<std::size_t>> class_of(trace.names.size());
  for (std::size_t n = 0; n < trace.names.size(); ++n) class_of[n] = classes.classify(trace.names[n]);
  std::vector<ClassTotal> totals(classes.classes().size());
  for (std::size_t c = 0; c < totals.size(); ++c) {
    totals[c].name = classes.classes()[c].name;
    totals[c].kind = classes.classes()[c].kind;
    totals[c].plumb_op = classes.classes()[c].plumb_op;
  }
  std::map<std::uint32_t, UnknownKernel> unknown;
  std::map<std::pair<std::int32_t, std::int32_t>, std::vector<Interval>> by_stream;
  std::map<std::pair<std::int32_t, std::int32_t>, double> stream_communication;
  std::vector<Interval> compute, communication;
  double first = std::numeric_limits<double>::max(), last = std::numeric_limits<double>::lowest();
  for (const GpuEvent& e : trace.events) {
    const Interval span{e.start_us, e.start_us + e.duration_us};
    first = std::min(first, span.first);
    last = std::max(last, span.second);
    by_stream[{e.device, e.stream}].push_back(span);
    const std::optional<std::size_t> c = class_of[e.name];
    if (!c) {
      UnknownKernel& u = unknown[e.name];
      u.name = trace.names[e.name];
      ++u.kernels;
      u.time_us += e.duration_us;
      s.unknown_time_us += e.duration_us;
      compute.push_back(span);  // an unknown kernel still occupies its stream
      continue;
    }
    ClassTotal& t = totals[*c];
    ++t.kernels;
    t.time_us += e.duration_us;
    t.streams[e.stream] += e.duration_us;
    s.by_plumb_op[t.plumb_op] += e.duration_us;
    if (t.kind == TimelineRole::communication) {
      communication.push_back(span);
      stream_communication[{e.device, e.stream}] += e.duration_us;
    } else if (t.kind == TimelineRole::compute) {
      compute.push_back(span);
    }
  }
  if (!trace.events.empty()) {
    s.start_us = first;
    s.span_us = last - first;
  }
  for (ClassTotal& t : totals)
    if (t.kernels > 0) s.classes.push_back(std::move(t));
  std::stable_sort(s.classes.begin(), s.classes.end(), [](const ClassTotal& a, const ClassTotal& b) { return a.time_us > b.time_us; });
  for (auto& [id, u] : unknown) s.unknown.push_back(std::move(u));
  std::stable_sort(s.unknown.begin(), s.unknown.end(), [](const UnknownKernel& a, const UnknownKernel& b) { return a.time_us > b.time_us; });
  for (auto& [key, spans] : by_stream) {
    StreamTotal st{key.first, key.second, spans.size()};
    const std::vector<Interval> busy = merged(spans);
    st.busy_us = length(busy);
    for (std::size_t i = 1; i < busy.size(); ++i) {
      const double gap = busy[i].first - busy[i - 1].second;
      st.gaps_us += gap;
      st.longest_gap_us = std::max(st.longest_gap_us, gap);
    }
    st.communication = 2 * stream_communication[key] > st.busy_us;
    s.streams.push_back(st);
  }
  const std::vector<Interval> c = merged(std::move(compute)), m = merged(std::move(communication));
  s.compute_busy_us = length(c);
  s.communication_busy_us = length(m);
  s.overlap_us = intersection(c, m);
  return s;
}

}  // namespace plumb
