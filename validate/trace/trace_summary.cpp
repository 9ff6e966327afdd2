#include "validate/trace/trace_summary.hpp"

#include <algorithm>
#include <limits>
#include <utility>

#include "sim/intervals.hpp"

namespace plumb {

using sim::Interval;

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
  std::map<std::int64_t, GemmSample> gemms;
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
    if (t.plumb_op == "gemm" && e.external_id >= 0)
      if (auto shape = trace.gemm_shapes.find(e.external_id); shape != trace.gemm_shapes.end()) {
        GemmSample& g = gemms[e.external_id];
        g.shape = shape->second;
        g.time_us += e.duration_us;
        ++g.kernels;
      }
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
    const std::vector<Interval> busy = sim::merged_intervals(spans);
    st.busy_us = sim::total_length(busy);
    for (std::size_t i = 1; i < busy.size(); ++i) {
      const double gap = busy[i].first - busy[i - 1].second;
      st.gaps_us += gap;
      st.longest_gap_us = std::max(st.longest_gap_us, gap);
    }
    st.communication = 2 * stream_communication[key] > st.busy_us;
    s.streams.push_back(st);
  }
  const std::vector<Interval> c = sim::merged_intervals(std::move(compute)), m = sim::merged_intervals(std::move(communication));
  s.compute_busy_us = sim::total_length(c);
  s.communication_busy_us = sim::total_length(m);
  s.overlap_us = sim::overlap_length(c, m);
  for (auto& [id, g] : gemms) s.gemm_samples.push_back(std::move(g));
  return s;
}

}  // namespace plumb
