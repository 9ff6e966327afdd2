#pragma once
// SM partitioning with CUDA green contexts (CUDA 12.4+ driver API): `groups` disjoint sets of
// `sms_per_group` SMs, each a green context with its own stream, so that kernels launched into
// group g run only on its SMs — as DeepSeek-V3 gives its communication kernels 20 of 132 SMs, and as
// `plumb-validate run` gives each virtual pipeline stage its share of the GPU.
#include <cuda_runtime.h>
#include <string>
#include <vector>

namespace plumb::kernels {

class SmPartition {
 public:
  // Throws std::runtime_error when the driver cannot split so (the message has the device's SM
  // count, minimum partition and alignment, and the driver's error).
  SmPartition(int device, int groups, int sms_per_group);
  ~SmPartition();
  SmPartition(const SmPartition&) = delete;
  SmPartition& operator=(const SmPartition&) = delete;

  int groups() const { return static_cast<int>(streams_.size()); }
  int sms(int group) const { return sms_[static_cast<std::size_t>(group)]; }
  cudaStream_t stream(int group) const { return streams_[static_cast<std::size_t>(group)]; }
  // Makes the group's context current on this thread (events and library handles created next
  // belong to it); `leave()` returns to the device's primary context.
  void enter(int group) const;
  void leave() const;

 private:
  std::vector<void*> contexts_;  // CUgreenCtx
  std::vector<void*> plain_;     // CUcontext of each green context
  std::vector<cudaStream_t> streams_;
  std::vector<int> sms_;
  void* primary_ = nullptr;  // CUcontext
};

}  // namespace plumb::kernels
