#include "cli/report/trace_report.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

namespace plumb {

namespace {

std::string_view kind_name(TimelineRole k) {
  switch (k) {
    case TimelineRole::compute: return "compute";
    case TimelineRole::communication: return "communication";
    case TimelineRole::copy: return "copy";
  }
  return "?";
}

double share(double part, double whole) { return whole > 0 ? 100 * part / whole : 0; }

}  // namespace

std::string trace_text(const TraceSummary& s, std::size_t unknown_rows, const TraceCollectiveLogs& collectives) {
  std::string out = fmt::format("{}{}: {} GPU events of {} in the trace, span {:.3f} ms\n\n", s.file,
                                s.device_name.empty() ? "" : " (" + s.device_name + ")", s.gpu_events, s.events_seen, s.span_us / 1e3);
  out += fmt::format("{:<22} {:<14} {:>8} {:>11} {:>7}  {}\n", "class", "kind", "kernels", "time ms", "% span", "streams (ms)");
  for (const ClassTotal& c : s.classes) {
    std::string streams;
    for (const auto& [stream, t] : c.streams) streams += fmt::format("{}{}: {:.2f}", streams.empty() ? "" : ", ", stream, t / 1e3);
    out += fmt::format("{:<22} {:<14} {:>8} {:>11.3f} {:>6.1f}%  {}\n", c.name, kind_name(c.kind), c.kernels, c.time_us / 1e3,
                       share(c.time_us, s.span_us), streams);
  }
  if (s.unknown_time_us > 0 || !s.unknown.empty())
    out += fmt::format("{:<22} {:<14} {:>8} {:>11.3f} {:>6.1f}%\n", "unknown", "", s.unknown.size(), s.unknown_time_us / 1e3,
                       share(s.unknown_time_us, s.span_us));
  out += "\nby the op class plumb prices: ";
  std::string ops;
  for (const auto& [op, t] : s.by_plumb_op) ops += fmt::format("{}{} {:.3f} ms", ops.empty() ? "" : ", ", op, t / 1e3);
  out += ops + "\n\n";
  out += fmt::format("{:>6} {:>6} {:<13} {:>8} {:>10} {:>7} {:>10} {:>14} {:>13} {:>13}\n", "device", "stream", "role", "kernels", "busy ms",
                     "% span", "gaps ms", "longest gap us", "queued gap us", "host wait ms");
  for (const StreamTotal& st : s.streams)
    out += fmt::format("{:>6} {:>6} {:<13} {:>8} {:>10.3f} {:>6.1f}% {:>10.3f} {:>14.1f} {:>13.1f} {:>13.3f}\n", st.device, st.stream,
                       st.communication ? "communication" : "compute", st.kernels, st.busy_us / 1e3, share(st.busy_us, s.span_us),
                       st.gaps_us / 1e3, st.longest_gap_us, st.median_queued_gap_us, st.host_wait_us / 1e3);
  if (s.launches_known > 0)
    out += fmt::format("\nbetween kernels on the compute streams: a median {:.1f} us over {} gaps before kernels launched while their stream "
                       "was busy (the device's own time between kernels: kernel_overhead), and {:.3f} ms with no compute kernel "
                       "running while a compute stream waited on the host's launch call\n",
                       s.kernel_gap_us, s.kernel_gaps, s.host_wait_us / 1e3);
  else
    out += "\nthe trace holds no launch calls (cuda_runtime events): gaps are not split into the device's and the host's\n";
  if (s.launch_calls > 1)
    out += fmt::format("the host: {} launch calls on {} thread(s), a median {:.1f} us apart on a thread (plumb calibrate --trace turns "
                       "this into training.host_overhead)\n",
                       s.launch_calls, s.launch_threads, s.launch_interval_us);
  if (!s.collectives.empty()) {
    out += fmt::format("\n{} collective kernels carry their message (PyTorch's annotation); by collective, group and size (the fastest "
                       "kernel is the least delayed by its peers; plumb calibrate --trace … --fabric-out fits the fabric to them):\n",
                       s.collectives.size());
    out += fmt::format("{:<28} {:>12} {:>8} {:>12} {:>12} {:>14}\n", "collective", "bytes", "kernels", "fastest us", "median us", "busbw GB/s");
    for (const TraceCollectiveRow& r : collectives.rows)
      out += fmt::format("{:<28} {:>12.0f} {:>8} {:>12.2f} {:>12.2f} {:>14.1f}\n",
                         fmt::format("{} {}×{} node(s)", collective_op_name(r.op), r.ranks, r.nodes), r.bytes, r.kernels, 1e6 * r.fastest_s,
                         1e6 * r.median_s, r.bus_bandwidth() / 1e9);
    for (const std::string& w : collectives.left_out) out += "  not fitted by --fabric-out: " + w + "\n";
  }
  out += fmt::format("\ncompute kernels busy {:.3f} ms, communication kernels busy {:.3f} ms, both at once {:.3f} ms: "
                     "{:.1f}% of communication overlapped, {:.3f} ms exposed\n",
                     s.compute_busy_us / 1e3, s.communication_busy_us / 1e3, s.overlap_us / 1e3, share(s.overlap_us, s.communication_busy_us),
                     s.exposed_communication_us() / 1e3);
  if (!s.unknown.empty()) {
    out += fmt::format("\n{} kernel name(s) no rule in the class table knew (add a rule to hw_profiles/kernel_classes.json):\n", s.unknown.size());
    for (std::size_t i = 0; i < s.unknown.size() && i < unknown_rows; ++i)
      out += fmt::format("  {:>6} × {:>10.3f} ms  {}\n", s.unknown[i].kernels, s.unknown[i].time_us / 1e3, s.unknown[i].name);
    if (s.unknown.size() > unknown_rows) out += fmt::format("  … and {} more (--unknown N shows more)\n", s.unknown.size() - unknown_rows);
  }
  return out;
}

Json trace_json(const TraceSummary& s, const TraceCollectiveLogs& collectives) {
  Json classes = Json::array(), streams = Json::array(), unknown = Json::array();
  for (const ClassTotal& c : s.classes) {
    Json per_stream = Json::object();
    for (const auto& [stream, t] : c.streams) per_stream[std::to_string(stream)] = t * 1e-6;
    classes.push_back({{"class", c.name}, {"kind", kind_name(c.kind)}, {"plumb_op", c.plumb_op}, {"kernels", c.kernels},
                       {"seconds", c.time_us * 1e-6}, {"streams", per_stream}});
  }
  for (const StreamTotal& st : s.streams)
    streams.push_back({{"device", st.device}, {"stream", st.stream}, {"role", st.communication ? "communication" : "compute"},
                       {"kernels", st.kernels}, {"busy_s", st.busy_us * 1e-6}, {"gaps_s", st.gaps_us * 1e-6},
                       {"longest_gap_s", st.longest_gap_us * 1e-6}, {"queued_gaps", st.queued_gaps},
                       {"median_queued_gap_s", st.median_queued_gap_us * 1e-6}, {"host_bound_kernels", st.host_bound},
                       {"host_wait_s", st.host_wait_us * 1e-6}});
  for (const UnknownKernel& u : s.unknown) unknown.push_back({{"name", u.name}, {"kernels", u.kernels}, {"seconds", u.time_us * 1e-6}});
  Json ops = Json::object();
  for (const auto& [op, t] : s.by_plumb_op) ops[op] = t * 1e-6;
  return {{"file", s.file},
          {"device", s.device_name},
          {"gpu_events", s.gpu_events},
          {"events", s.events_seen},
          {"span_s", s.span_us * 1e-6},
          {"classes", classes},
          {"by_plumb_op_s", ops},
          {"streams", streams},
          {"compute_busy_s", s.compute_busy_us * 1e-6},
          {"communication_busy_s", s.communication_busy_us * 1e-6},
          {"overlap_s", s.overlap_us * 1e-6},
          {"exposed_communication_s", s.exposed_communication_us() * 1e-6},
          {"kernel_gap_s", s.kernel_gap_us * 1e-6},
          {"kernel_gaps", s.kernel_gaps},
          {"host_wait_s", s.host_wait_us * 1e-6},
          {"launches_known", s.launches_known},
          {"launch_calls", s.launch_calls},
          {"launch_threads", s.launch_threads},
          {"launch_interval_s", s.launch_interval_us * 1e-6},
          {"annotated_collectives", s.collectives.size()},
          {"collectives", [&] {
             Json rows = Json::array();
             for (const TraceCollectiveRow& r : collectives.rows)
               rows.push_back({{"collective", collective_op_name(r.op)}, {"ranks", r.ranks}, {"nodes", r.nodes}, {"bytes", r.bytes},
                               {"kernels", r.kernels}, {"fastest_s", r.fastest_s}, {"median_s", r.median_s},
                               {"bus_bandwidth", r.bus_bandwidth()}});
             return rows;
           }()},
          {"unknown", unknown},
          {"unknown_s", s.unknown_time_us * 1e-6}};
}

namespace {
double error_of(double predicted, double measured) { return measured > 0 ? predicted / measured - 1 : 0; }
}  // namespace

std::string trace_comparison_text(const TraceComparison& c) {
  std::string out = fmt::format("{} — stage {} ({} layers), forward and backward, against {}{}\n\n", c.scenario, c.stage, c.layers, c.trace,
                                c.device.empty() ? "" : " (" + c.device + ")");
  std::vector<TraceClassComparison> rows = c.classes;
  std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return std::abs(error_of(a.predicted, a.measured)) > std::abs(error_of(b.predicted, b.measured));
  });
  out += fmt::format("{:<28} {:>12} {:>12} {:>8}\n", "GPU time by op class", "measured ms", "predicted ms", "error");
  for (const TraceClassComparison& r : rows)
    out += fmt::format("{:<28} {:>12.3f} {:>12.3f} {:>+7.1f}%\n", r.op, 1e3 * r.measured, 1e3 * r.predicted, 100 * error_of(r.predicted, r.measured));
  out += fmt::format("{:<28} {:>12.3f} {:>12.3f} {:>+7.1f}%\n", c.pair ? "span (an F&B pair)" : "span (forward then backward)",
                     1e3 * c.measured_span, 1e3 * c.predicted_span, 100 * error_of(c.predicted_span, c.measured_span));
  if (!c.streams.empty()) {
    out += fmt::format("\n{:<28} {:>12} {:>12} {:>8}\n", "streams over the span", "measured ms", "predicted ms", "error");
    for (const TraceClassComparison& r : c.streams)
      out += fmt::format("{:<28} {:>12.3f} {:>12.3f} {:>+7.1f}%\n", r.op, 1e3 * r.measured, 1e3 * r.predicted, 100 * error_of(r.predicted, r.measured));
  }
  if (!c.collectives.empty()) {
    std::vector<TraceComparison::Collective> worst = c.collectives;
    std::stable_sort(worst.begin(), worst.end(), [](const auto& a, const auto& b) {
      return std::abs(error_of(a.predicted, a.measured)) > std::abs(error_of(b.predicted, b.measured));
    });
    out += fmt::format("\n{:<28} {:>12} {:>12} {:>12} {:>8}\n", "collectives (fastest kernel)", "bytes", "measured us", "predicted us", "error");
    const std::size_t shown = std::min<std::size_t>(worst.size(), 20);
    for (std::size_t i = 0; i < shown; ++i) {
      const auto& r = worst[i];
      out += fmt::format("{:<28} {:>12.0f} {:>12.2f} {:>12.2f} {:>+7.1f}%\n", fmt::format("{} {}×{} node(s)", r.op, r.ranks, r.nodes), r.bytes,
                         1e6 * r.measured, 1e6 * r.predicted, 100 * error_of(r.predicted, r.measured));
    }
    if (worst.size() > shown) out += fmt::format("… and {} more (--json lists them all)\n", worst.size() - shown);
  }
  if (c.unknown > 0) out += fmt::format("\n{:.3f} ms of the trace is in kernels no class rule knew (plumb trace lists them)\n", 1e3 * c.unknown);
  out += "\nmeasured: the trace's kernels by class (plumb trace); predicted: the stage's layers, every pass and its recomputation, "
         "at the GPU profile, and its TP/EP/CP communication (its permute and unpermute count as memory-bound work; DeepEP does them "
         "inside its communication kernels); streams: the trace's compute and communication streams (plumb trace) against the "
         "simulated step's compute stream and its communication streams for the same ops, idle being the span less compute busy; "
         "collectives: per collective, group and message size that PyTorch annotated, the trace's fastest kernel against plumb's "
         "collective model at the scenario's fabric\n";
  return out;
}

Json trace_comparison_json(const TraceComparison& c) {
  auto rows = [](const std::vector<TraceClassComparison>& list, const char* key) {
    Json out = Json::array();
    for (const TraceClassComparison& r : list)
      out.push_back({{key, r.op}, {"measured_s", r.measured}, {"predicted_s", r.predicted}, {"error", error_of(r.predicted, r.measured)}});
    return out;
  };
  const Json classes = rows(c.classes, "op"), streams = rows(c.streams, "stream");
  Json collectives = Json::array();
  for (const auto& r : c.collectives)
    collectives.push_back({{"collective", r.op}, {"ranks", r.ranks}, {"nodes", r.nodes}, {"bytes", r.bytes}, {"measured_s", r.measured},
                           {"predicted_s", r.predicted}, {"error", error_of(r.predicted, r.measured)}});
  return {{"scenario", c.scenario}, {"trace", c.trace}, {"device", c.device}, {"stage", c.stage}, {"layers", c.layers},
          {"span", {{"pair", c.pair}, {"measured_s", c.measured_span}, {"predicted_s", c.predicted_span},
                    {"error", error_of(c.predicted_span, c.measured_span)}}},
          {"classes", classes}, {"streams", streams}, {"collectives", collectives}, {"unknown_s", c.unknown}};
}

}  // namespace plumb
