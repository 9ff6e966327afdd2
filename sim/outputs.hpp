#pragma once
// What a run shows: a Chrome trace (opens in Perfetto and chrome://tracing — a process per GPU, a
// thread per stream, flow arrows from a transfer's sender to its receiver, memory counters) and
// per-resource utilisation.
#include <string>
#include <vector>

#include "sim/engine.hpp"

namespace plumb::sim {

std::string chrome_trace(const TaskGraph& graph, const Machine& machine, const SimResult& result,
                         const Topology* topology = nullptr);

struct Utilisation {
  std::string name;   // "gpu0/compute", "node0/gpu0→node0/nvswitch"
  double busy = 0;    // fraction of the makespan
};
std::vector<Utilisation> stream_utilisation(const Machine& machine, const SimResult& result);
// Directed links that carried any bytes: bytes carried / (bandwidth × makespan).
std::vector<Utilisation> link_utilisation(const Topology& topology, const SimResult& result);

}  // namespace plumb::sim
