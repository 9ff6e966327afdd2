#pragma once
// Timing a streaming kernel: the achievable share of a GPU's HBM bandwidth, which plumb's roofline
// applies to every elementwise op and to the optimizer (a GPU profile's hbm_efficiency); and the
// time a kernel launch adds on a busy stream (a profile's kernel_overhead).
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

// Seconds per kernel of `kernels` empty kernels launched back to back on one stream, after a
// warm-up (CUDA events around the batch): the launch cost every op of a step pays once.
double time_kernel_overhead(int kernels = 2000);

}  // namespace plumb::kernels
