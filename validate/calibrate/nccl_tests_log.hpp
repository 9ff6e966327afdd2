#pragma once
// Reading nccl-tests output (all_reduce_perf, reduce_scatter_perf, all_gather_perf, alltoall_perf,
// broadcast_perf, sendrecv_perf), the logs users already have from their clusters: the collective,
// the ranks and the nodes they ran on (from the "# Rank … on HOST device …" lines), and per message
// size the out-of-place and in-place time, algbw and busbw.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "models/costs/collective.hpp"

namespace plumb {

struct NcclTestsRow {
  double bytes = 0;
  double time_s = 0;      // out-of-place, the convention of nccl-tests' summaries
  double algbw = 0, busbw = 0;  // bytes/s, as printed (GB/s × 1e9)
  double in_place_time_s = 0;
};

struct NcclTestsLog {
  std::string file;
  CollectiveOp op = CollectiveOp::all_reduce;
  std::string op_source;  // "header" (Collective test starting: …) or how it was inferred
  std::int64_t ranks = 0, nodes = 0;
  std::string device;     // from the first rank line
  std::vector<NcclTestsRow> rows;
};

// Throws InputError naming the file and line on anything it cannot read.
NcclTestsLog parse_nccl_tests_log(const std::string& text, const std::string& file);

// nccl-tests' bus-bandwidth factor for `ranks`: 2(n−1)/n for all-reduce, (n−1)/n for all-gather,
// reduce-scatter and all-to-all, 1 otherwise.
double nccl_tests_bus_factor(CollectiveOp op, std::int64_t ranks);
// The binary nccl-tests runs for `op` ("all_reduce_perf"); throws std::invalid_argument for ops it has none for.
std::string nccl_tests_binary(CollectiveOp op);

// A log as nccl-tests prints it — header, one "# Rank … on HOST device …" line per rank, a result row
// per size (float data, out-of-place and in-place columns) — for rows measured by plumb-validate
// collectives, so that plumb calibrate --nccl-tests reads them like the users' own logs.
// `rows` need bytes and time_s (and in_place_time_s); algbw and busbw are computed.
std::string nccl_tests_log_text(CollectiveOp op, const std::string& host, const std::vector<std::string>& devices,
                                const std::vector<NcclTestsRow>& rows);

}  // namespace plumb
