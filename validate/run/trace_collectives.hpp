#pragma once
// A profiler trace's collectives as nccl-tests logs, so that plumb calibrate fits the fabric to them as it
// fits nccl-tests' own: one log per collective, group size and node count, a row per message size. A
// collective's kernel in a training step starts when the host launches it and then waits inside for its
// slowest peer, so each row keeps the fastest of that size's kernels: the one least delayed, nearest to
// what nccl-tests' back-to-back loop measures (the lower envelope, not the mean).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "validate/calibrate/nccl_tests_log.hpp"
#include "validate/trace/trace_summary.hpp"

namespace plumb {

// The collective a PyTorch "Collective name" is ("allreduce", "_allgather_base",
// "all_gather_into_tensor_coalesced", "_reduce_scatter_base", "all_to_all", "broadcast", …); nullopt for
// those that move no bandwidth-bound message plumb prices as a collective (barrier, send, recv, gather, …).
std::optional<CollectiveOp> collective_op_of_pytorch(const std::string& name);

// The nodes a group's ranks span, ranks placed `gpus_per_node` to a node in order (torchrun's placement);
// where the trace did not list the ranks, the fewest nodes the group fits on.
std::int64_t nodes_of_group(const CollectiveArgs& args, std::int64_t gpus_per_node);

// One collective, group and message size of a trace: how many kernels, the fastest and the median.
struct TraceCollectiveRow {
  CollectiveOp op = CollectiveOp::all_reduce;
  std::int64_t ranks = 0, nodes = 0;
  double bytes = 0;  // the larger of the message's input and output, nccl-tests' convention
  std::uint64_t kernels = 0;
  double fastest_s = 0, median_s = 0;
  double bus_bandwidth() const;  // of the fastest, bytes/s (nccl-tests' bus factor)
};

struct TraceCollectiveLogs {
  std::vector<TraceCollectiveRow> rows;  // every priced collective's sizes, by collective, group and size
  std::vector<NcclTestsLog> logs;     // each with two message sizes or more
  std::vector<std::string> left_out;  // each other group and why it was not fitted
  std::uint64_t kernels = 0;          // kernels in `logs`
};
TraceCollectiveLogs collective_logs_from_trace(const TraceSummary& trace, std::int64_t gpus_per_node);

}  // namespace plumb
