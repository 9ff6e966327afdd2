#include "sim/outputs.hpp"

#include <fmt/format.h>

namespace plumb::sim {
namespace {

std::string escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) out += fmt::format("\\u{:04x}", static_cast<int>(c));
        else out += c;
    }
  }
  return out;
}

// Trace timestamps are microseconds; six decimals keep every picosecond.
std::string micros(Time t) { return fmt::format("{:.6f}", to_micros(t)); }

std::string_view kind_name(TaskKind k) {
  switch (k) {
    case TaskKind::compute: return "compute";
    case TaskKind::transfer: return "transfer";
    case TaskKind::marker: return "marker";
  }
  return "?";
}

}  // namespace

std::string chrome_trace(const TaskGraph& g, const Machine& m, const SimResult& r, const Topology* topology) {
  std::string out = "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
  bool first = true;
  auto emit = [&](const std::string& event) {
    if (!first) out += ",\n";
    out += event;
    first = false;
  };
  // Receives are drawn on one extra thread per GPU, after its streams.
  const std::size_t recv_tid = m.streams().size();
  for (std::size_t gpu = 0; gpu < m.gpus().size(); ++gpu) {
    emit(fmt::format(R"({{"name":"process_name","ph":"M","pid":{},"args":{{"name":"{}"}}}})", gpu,
                     escape(m.gpus()[gpu].name)));
    emit(fmt::format(R"({{"name":"process_sort_index","ph":"M","pid":{},"args":{{"sort_index":{}}}}})", gpu, gpu));
    emit(fmt::format(R"({{"name":"thread_name","ph":"M","pid":{},"tid":{},"args":{{"name":"network in"}}}})", gpu,
                     recv_tid));
  }
  for (std::size_t s = 0; s < m.streams().size(); ++s)
    emit(fmt::format(R"({{"name":"thread_name","ph":"M","pid":{},"tid":{},"args":{{"name":"{}"}}}})",
                     m.streams()[s].gpu, s, escape(m.streams()[s].name)));
  for (TaskId t = 0; t < g.size(); ++t) {
    StreamId s = g.stream(t);
    if (s == kNoStream || r.start[t] < 0) continue;
    std::int32_t gpu = m.gpu_of(s);
    std::string args = fmt::format(R"("task":{})", t);
    if (g.kind(t) == TaskKind::transfer) args += fmt::format(R"(,"bytes":{:.0f})", g.bytes(t));
    if (g.hold_sms(t) > 0) args += fmt::format(R"(,"sms":{})", g.hold_sms(t));
    emit(fmt::format(R"({{"name":"{}","cat":"{}","ph":"X","pid":{},"tid":{},"ts":{},"dur":{},"args":{{{}}}}})",
                     escape(g.label(t)), kind_name(g.kind(t)), gpu, s, micros(r.start[t]),
                     micros(r.end[t] - r.start[t]), args));
    if (g.kind(t) != TaskKind::transfer || !topology) continue;
    std::optional<std::int32_t> to = m.gpu_at(static_cast<Topology::Vertex>(g.dst(t)));
    if (!to) continue;
    emit(fmt::format(R"({{"name":"{}","cat":"transfer","ph":"s","id":{},"pid":{},"tid":{},"ts":{}}})",
                     escape(g.label(t)), t, gpu, s, micros(r.start[t])));
    emit(fmt::format(R"({{"name":"recv {}","cat":"transfer","ph":"X","pid":{},"tid":{},"ts":{},"dur":0,"args":{{"task":{}}}}})",
                     escape(g.label(t)), *to, recv_tid, micros(r.end[t]), t));
    emit(fmt::format(R"({{"name":"{}","cat":"transfer","ph":"f","bp":"e","id":{},"pid":{},"tid":{},"ts":{}}})",
                     escape(g.label(t)), t, *to, recv_tid, micros(r.end[t])));
  }
  for (std::size_t gpu = 0; gpu < r.memory.size(); ++gpu)
    for (const MemorySample& sample : r.memory[gpu])
      emit(fmt::format(R"({{"name":"memory","ph":"C","pid":{},"ts":{},"args":{{"bytes":{}}}}})", gpu,
                       micros(sample.time), sample.bytes));
  out += "\n]}\n";
  return out;
}

std::vector<Utilisation> stream_utilisation(const Machine& m, const SimResult& r) {
  std::vector<Utilisation> out;
  for (std::size_t s = 0; s < m.streams().size(); ++s) {
    const SimStream& st = m.streams()[s];
    double busy = r.makespan > 0 ? static_cast<double>(r.stream_busy[s]) / static_cast<double>(r.makespan) : 0.0;
    out.push_back({m.gpus()[static_cast<std::size_t>(st.gpu)].name + "/" + st.name, busy});
  }
  return out;
}

std::vector<Utilisation> link_utilisation(const Topology& topology, const SimResult& r) {
  std::vector<Utilisation> out;
  if (r.makespan <= 0) return out;
  for (LinkId l = 0; l < r.link_bytes.size(); ++l) {
    if (r.link_bytes[l] <= 0) continue;
    const LinkInfo& link = topology.link(l);
    out.push_back({topology.vertex(link.from).name + "→" + topology.vertex(link.to).name,
                   r.link_bytes[l] / (link.bandwidth * to_seconds(r.makespan))});
  }
  return out;
}

}  // namespace plumb::sim
