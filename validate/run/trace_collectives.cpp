#include "validate/run/trace_collectives.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <map>
#include <tuple>

#include "models/input/statistics.hpp"

namespace plumb {

std::optional<CollectiveOp> collective_op_of_pytorch(const std::string& name) {
  std::string n;
  for (char ch : name)
    if (ch != '_') n += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (n.find("allreduce") != std::string::npos) return CollectiveOp::all_reduce;
  if (n.find("allgather") != std::string::npos) return CollectiveOp::all_gather;
  if (n.find("reducescatter") != std::string::npos) return CollectiveOp::reduce_scatter;
  if (n.find("alltoall") != std::string::npos) return CollectiveOp::all_to_all;
  if (n.find("broadcast") != std::string::npos) return CollectiveOp::broadcast;
  return std::nullopt;
}

std::int64_t nodes_of_group(const CollectiveArgs& a, std::int64_t gpus_per_node) {
  const std::int64_t per_node = std::max<std::int64_t>(1, gpus_per_node);
  const std::int64_t fewest = (a.group_size + per_node - 1) / per_node;
  if (a.lowest_rank < 0) return fewest;
  // Evenly spaced ranks a node or more apart each sit on their own node; closer ones miss no node
  // between the lowest's and the highest's. Uneven ones: at most every node between, at least the fewest.
  if (a.rank_stride >= per_node) return a.group_size;
  if (a.rank_stride > 0) return a.highest_rank / per_node - a.lowest_rank / per_node + 1;
  return std::clamp(a.highest_rank / per_node - a.lowest_rank / per_node + 1, fewest, a.group_size);
}

double TraceCollectiveRow::bus_bandwidth() const { return fastest_s > 0 ? bytes / fastest_s * nccl_tests_bus_factor(op, ranks) : 0; }

TraceCollectiveLogs collective_logs_from_trace(const TraceSummary& trace, std::int64_t gpus_per_node) {
  TraceCollectiveLogs out;
  // (op, ranks, nodes) → bytes → the kernels' times
  std::map<std::tuple<CollectiveOp, std::int64_t, std::int64_t>, std::map<double, std::vector<double>>> groups;
  std::map<std::string, std::uint64_t> unpriced;
  for (const CollectiveSample& s : trace.collectives) {
    const std::optional<CollectiveOp> op = collective_op_of_pytorch(s.args.collective);
    if (!op || s.args.group_size < 2 || !(s.time_us > 0) || !(s.args.bytes() > 0)) {
      ++unpriced[s.args.collective.empty() ? "(unnamed)" : s.args.collective];
      continue;
    }
    groups[{*op, s.args.group_size, nodes_of_group(s.args, gpus_per_node)}][s.args.bytes()].push_back(s.time_us * 1e-6);
  }
  for (const auto& [name, kernels] : unpriced)
    out.left_out.push_back(fmt::format("{}: {} kernel(s) of a collective plumb does not fit a bandwidth to (or of one rank)", name, kernels));
  for (const auto& [key, sizes] : groups) {
    const auto& [op, ranks, nodes] = key;
    std::uint64_t kernels = 0;
    NcclTestsLog log;
    log.file = trace.file;
    log.op = op;
    log.op_source = "PyTorch's annotation of the kernels (Collective name)";
    log.ranks = ranks;
    log.nodes = nodes;
    log.device = trace.device_name;
    for (const auto& [bytes, times] : sizes) {
      TraceCollectiveRow row{op, ranks, nodes, bytes, times.size(), *std::min_element(times.begin(), times.end()), median(times)};
      kernels += row.kernels;
      NcclTestsRow r;
      r.bytes = bytes;
      r.time_s = r.in_place_time_s = row.fastest_s;
      r.algbw = bytes / r.time_s;
      r.busbw = row.bus_bandwidth();
      log.rows.push_back(r);
      out.rows.push_back(row);
    }
    if (sizes.size() < 2) {
      out.left_out.push_back(fmt::format("{} on {} ranks over {} node(s): {} kernel(s) of one message size; a bandwidth and a latency need two "
                                         "sizes or more",
                                         collective_op_name(op), ranks, nodes, kernels));
      continue;
    }
    out.kernels += kernels;
    out.logs.push_back(std::move(log));
  }
  return out;
}

}  // namespace plumb
