#pragma once
// Timing NCCL collectives over the GPUs of this machine from one process, as nccl-tests does:
// float data, out-of-place and in-place, a few warm-up iterations, then the mean of `iterations`
// back-to-back launches between CUDA events on every GPU's stream (the slowest GPU's time). NCCL is
// loaded at run time (libnccl.so.2, or the library PLUMB_NCCL names), so plumb-validate starts on
// machines without it.
#include <cstdint>
#include <string>
#include <vector>

namespace plumb::kernels {

enum class NcclCollective { all_reduce, all_gather, reduce_scatter, all_to_all };

struct NcclTiming {
  double bytes = 0;  // nccl-tests' size column: the whole buffer (all-gather: the output; reduce-scatter: the input)
  double seconds = 0, in_place_seconds = 0;
};

// Sizes from `min_bytes` to `max_bytes` doubling; throws std::runtime_error (NCCL or CUDA error, no
// NCCL library, fewer than two GPUs) with what to do.
std::vector<NcclTiming> time_nccl(NcclCollective op, const std::vector<int>& devices, double min_bytes, double max_bytes,
                                  int warmup = 5, int iterations = 20);

}  // namespace plumb::kernels
