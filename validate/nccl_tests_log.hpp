#pragma once
// Reading nccl-tests output (all_reduce_perf, reduce_scatter_perf, all_gather_perf, alltoall_perf,
// broadcast_perf, sendrecv_perf), the logs users already have from their clusters: the collective,
// the ranks and the nodes they ran on (from the "# Rank … on HOST device …" lines), and per message
// size the out-of-place and in-place time, algbw and busbw.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "models/collective.hpp"

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

}  // namespace plumb
