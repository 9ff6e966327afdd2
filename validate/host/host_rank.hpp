#pragma once
// One pipeline rank on the host: its buffers (as plan_buffers sizes them) and the host kernels run on
// them, each timed in the calling thread's CPU time. The threaded backend (host_pipeline_device) holds
// one per thread, the MPI backend (mpi_pipeline_device) one per process.
#include <cstdint>
#include <memory>
#include <vector>

#include "validate/host/host_kernels.hpp"
#include "validate/run/virtual_run.hpp"

namespace plumb {

class HostRank {
 public:
  HostRank(const VirtualRun& run, int rank);

  // Each returns the thread CPU seconds it took.
  double run(const KernelStep& k);
  // A memory-bound pass moving `bytes` in all (half read, half written) between the rank's activation buffers.
  double stream(double bytes);
  // `bytes` of the rank's activations copied into `inbox` (another rank's, or a staging buffer).
  double send_to(std::vector<std::uint16_t>& inbox, double bytes) const;

  std::vector<std::uint16_t>& inbox() { return inbox_; }
  // Bytes one send moves between two ranks' buffers: the payload, as far as both buffers hold it.
  static std::size_t message_bytes(const VirtualRun& run, int from, int to);

 private:
  std::vector<float> a_, b_, c_;                     // GEMM operands, in float
  std::vector<std::uint16_t> x_, y_, w_, inbox_;     // activations, norm weights, the inbox, as bf16 bits
  std::vector<float> rstd_;
  std::vector<std::int32_t> index_;
  std::unique_ptr<host::AttentionTensors> attention_;
};

}  // namespace plumb
