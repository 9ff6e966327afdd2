#pragma once
// `plumb-validate bench --backend host`: the scenario's GEMM shapes, a sweep of small squares, its
// attention call, streaming copies and the memory-bound kernels its host run executes (norms, SwiGLU,
// gathers, streaming passes: each distinct one with its bytes as plumb prices them and its runs a
// step), each timed with the host backend's kernels on one thread in thread CPU time (as the host
// backend's run times them), written in the format `plumb calibrate` reads.
#include <iosfwd>
#include <optional>
#include <string>

#include "models/input/json_reader.hpp"
#include "models/scenario/job.hpp"
#include "models/hardware/hardware.hpp"

namespace plumb {

struct HostBenchOptions {
  bool sweep = true;      // squares 64…1024 beside the scenario's shapes
  bool attention = true;
  int reps = 5;           // timed repetitions after one warm-up; the median is kept
};

// Progress lines go to `progress`. Throws std::runtime_error when a kernel runs faster than `profile`'s
// peak (or a copy above its bandwidth): a timing error, not a result.
Json host_bench(const Job* job, const HostBenchOptions& options, const std::optional<GpuSpec>& profile, const std::string& date,
                std::ostream& progress);

}  // namespace plumb
