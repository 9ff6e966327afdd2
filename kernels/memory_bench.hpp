#pragma once
// Timing a streaming kernel: the achievable share of a GPU's HBM bandwidth, which plumb's roofline
// applies to every elementwise op and to the optimizer (a GPU profile's hbm_efficiency).
#include <cstddef>

namespace plumb::kernels {

struct CopyTiming {
  double bytes_moved = 0;     // read plus written per run
  double median_seconds = 0;
  int repetitions = 0;
};

// Copies `bytes` from one device buffer to another with 16-byte loads and stores, the buffers rotated
// so that each run streams from HBM (together more than twice L2); CUDA events, warm-up, median.
// Throws std::runtime_error with the CUDA error on failure (out of memory included).
CopyTiming time_copy(std::size_t bytes, int warmup = 3, int repetitions = 20);

}  // namespace plumb::kernels
