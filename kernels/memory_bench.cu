#include "kernels/memory_bench.hpp"

#include "kernels/cuda_check.hpp"

#include <algorithm>
#include <cuda_runtime.h>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace plumb::kernels {
namespace {

__global__ void copy16(const uint4* __restrict__ in, uint4* __restrict__ out, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    out[i] = in[i];
}

// Never zeros (they can take fast paths), one distinct word per position.
__global__ void fill_words(std::uint32_t* p, std::size_t n, std::uint32_t seed) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    p[i] = (static_cast<std::uint32_t>(i) * 2654435761u ^ seed) | 1u;
}

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
    fill_words<<<1024, 256>>>(static_cast<std::uint32_t*>(in.back()->p), bytes / 4, 31u + static_cast<std::uint32_t>(i));
  }
  check(cudaGetLastError(), "fill_words");
  const std::size_t n = bytes / 16;
  const int threads = 256, blocks = 8 * sms;  // a few resident blocks per SM, grid-striding
  cudaStream_t stream = nullptr;
  check(cudaStreamCreate(&stream), "cudaStreamCreate");
  auto launch = [&](int i) {
    std::size_t s = static_cast<std::size_t>(i % pairs);
    copy16<<<blocks, threads, 0, stream>>>(static_cast<const uint4*>(in[s]->p), static_cast<uint4*>(out[s]->p), n);
  };
  std::vector<double> seconds = time_runs(stream, warmup, repetitions, launch);
  cudaStreamDestroy(stream);
  CopyTiming t;
  t.bytes_moved = 2.0 * static_cast<double>(bytes);
  t.median_seconds = seconds[seconds.size() / 2];
  t.repetitions = repetitions;
  return t;
}

}  // namespace plumb::kernels
