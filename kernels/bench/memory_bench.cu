#include "kernels/bench/memory_bench.hpp"

#include "kernels/cuda_check.hpp"
#include "kernels/device_fill.hpp"
#include "kernels/layer_kernels.hpp"

#include <algorithm>
#include <cuda_runtime.h>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace plumb::kernels {
namespace {
__global__ void empty_kernel() {}
}  // namespace

CopyTiming time_copy(std::size_t bytes, int warmup, int repetitions) {
  if (bytes < 16 || bytes % 16 != 0) throw std::runtime_error("time_copy: bytes must be a positive multiple of 16");
  int device = 0, l2 = 0, sms = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  check(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device), "cudaDeviceGetAttribute(L2)");
  check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "cudaDeviceGetAttribute(SMs)");
  const int pairs = static_cast<int>(std::clamp<std::size_t>(2 * static_cast<std::size_t>(l2) / (2 * bytes) + 1, 1, 16));
  std::vector<std::unique_ptr<DeviceBuffer>> in, out;
  for (int i = 0; i < pairs; ++i) {
    in.push_back(std::make_unique<DeviceBuffer>(bytes));
    out.push_back(std::make_unique<DeviceBuffer>(bytes));
    fill_nonzero(in.back()->p, bytes / 4, Element::word32, 31u + static_cast<std::uint32_t>(i));
  }
  const int blocks = 8 * sms;  // a few resident blocks per SM, grid-striding
  cudaStream_t stream = nullptr;
  check(cudaStreamCreate(&stream), "cudaStreamCreate");
  auto launch = [&](int i) {
    std::size_t s = static_cast<std::size_t>(i % pairs);
    stream_copy(in[s]->p, out[s]->p, bytes, blocks, stream);
  };
  std::vector<double> seconds = time_runs(stream, warmup, repetitions, launch);
  cudaStreamDestroy(stream);
  CopyTiming t;
  t.bytes_moved = 2.0 * static_cast<double>(bytes);
  t.median_seconds = seconds[seconds.size() / 2];
  t.repetitions = repetitions;
  return t;
}

double time_kernel_overhead(int kernels) {
  cudaStream_t stream = nullptr;
  check(cudaStreamCreate(&stream), "cudaStreamCreate");
  auto batch = [&](int) {
    for (int i = 0; i < kernels; ++i) empty_kernel<<<1, 32, 0, stream>>>();
  };
  std::vector<double> seconds = time_runs(stream, 2, 5, batch);
  cudaStreamDestroy(stream);
  return seconds[seconds.size() / 2] / kernels;
}

}  // namespace plumb::kernels
