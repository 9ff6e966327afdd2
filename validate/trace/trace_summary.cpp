#include "validate/trace/trace_summary.hpp"

#include <algorithm>
#include <limits>
#include <utility>

#include "sim/intervals.hpp"
#include "models/input/statistics.hpp"

namespace plumb {

using sim::Interval;

namespace {

struct Launched {
  double start = 0, end = 0, launch = -1;
};

// A stream's gaps by cause (StreamTotal); the queued gaps appended to `queued`, the spans waiting on
// the host to `host`.
void gaps_by_cause(std::vector<Launched> kernels, StreamTotal& st, std::vector<double>& queued, std::vector<Interval>& host) {
  std::stable_sort(kernels.begin(), kernels.end(), [](const Launched& a, const Launched& b) { return a.start < b.start; });
  std::vector<double> mine;
  double busy_until = kernels.empty() ? 0 : kernels.front().end;
  for (std::size_t i = 1; i < kernels.size(); ++i) {
    const Launched& k = kernels[i];
    const double gap = k.start - busy_until;
    if (gap >= 0 && k.launch >= 0) {
      if (k.launch < busy_until) {
        mine.push_back(gap);
      } else {
        ++st.host_bound;
        const double wait = std::min(gap, k.launch - busy_until);
        st.host_wait_us += wait;
        host.emplace_back(busy_until, busy_until + wait);
      }
    }
    busy_until = std::max(busy_until, k.end);
  }
  st.queued_gaps = mine.size();
  st.median_queued_gap_us = median(mine);
  queued.insert(queued.end(), mine.begin(), mine.end());
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
  std::map<std::pair<std::int32_t, std::int32_t>, std::vector<Launched>> by_stream;
  std::map<std::pair<std::int32_t, std::int32_t>, double> stream_communication;
  std::vector<Interval> compute, communication;
  std::map<std::int64_t, GemmSample> gemms;
  double first = std::numeric_limits<double>::max(), last = std::numeric_limits<double>::lowest();
  for (const GpuEvent& e : trace.events) {
    const Interval span{e.start_us, e.start_us + e.duration_us};
    first = std::min(first, span.first);
    last = std::max(last, span.second);
    by_stream[{e.device, e.stream}].push_back({span.first, span.second, e.launch_us});
    if (e.launch_us >= 0) ++s.launches_known;
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
  std::vector<double> queued;          // the compute streams' queued gaps
  std::vector<Interval> host_waits;    // and their spans waiting on the host
  for (auto& [key, kernels] : by_stream) {
    StreamTotal st{key.first, key.second, kernels.size()};
    std::vector<Interval> spans;
    for (const Launched& k : kernels) spans.emplace_back(k.start, k.end);
    const std::vector<Interval> busy = sim::merged_intervals(std::move(spans));
    st.busy_us = sim::total_length(busy);
    for (std::size_t i = 1; i < busy.size(); ++i) {
      const double gap = busy[i].first - busy[i - 1].second;
      st.gaps_us += gap;
      st.longest_gap_us = std::max(st.longest_gap_us, gap);
    }
    st.communication = 2 * stream_communication[key] > st.busy_us;
    std::vector<double> unused;
    std::vector<Interval> unused_spans;
    gaps_by_cause(std::move(kernels), st, st.communication ? unused : queued, st.communication ? unused_spans : host_waits);
    s.streams.push_back(st);
  }
  s.kernel_gaps = queued.size();
  s.kernel_gap_us = median(std::move(queued));
  for (const CollectiveArgs& a : trace.collectives) s.collectives.push_back({a, trace.events[a.event].duration_us});
  std::map<std::int64_t, std::vector<double>> by_thread;
  for (const HostLaunch& l : trace.launches) by_thread[l.thread].push_back(l.start_us);
  std::vector<double> intervals;
  for (auto& [thread, starts] : by_thread) {
    std::sort(starts.begin(), starts.end());
    for (std::size_t i = 1; i < starts.size(); ++i) intervals.push_back(starts[i] - starts[i - 1]);
  }
  s.launch_calls = trace.launches.size();
  s.launch_threads = by_thread.size();
  s.launch_interval_us = median(std::move(intervals));
  const std::vector<Interval> c = sim::merged_intervals(std::move(compute)), m = sim::merged_intervals(std::move(communication));
  s.compute_busy_us = sim::total_length(c);
  s.communication_busy_us = sim::total_length(m);
  s.overlap_us = sim::overlap_length(c, m);
  // Waiting on the host costs only while no compute kernel runs on any stream.
  const std::vector<Interval> waits = sim::merged_intervals(std::move(host_waits));
  s.host_wait_us = sim::total_length(waits) - sim::overlap_length(waits, c);
  for (auto& [id, g] : gemms) s.gemm_samples.push_back(std::move(g));
  return s;
}

}  // namespace plumb
