#pragma once
// What every kernels/ benchmark needs: a CUDA status check that throws with the error text, an owned
// device buffer, and event timing.
#include <algorithm>
#include <cstddef>
#include <cuda_runtime.h>
#include <stdexcept>
#include <string>
#include <vector>

namespace plumb::kernels {

inline void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
}

struct DeviceBuffer {
  void* p = nullptr;
  explicit DeviceBuffer(std::size_t bytes) { check(cudaMalloc(&p, bytes), "cudaMalloc"); }
  ~DeviceBuffer() { cudaFree(p); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

// Runs launch(i) `warmup` times, then `repetitions` times between CUDA events on `stream`; returns
// the seconds of each timed run, sorted (the median is the middle one).
template <typename Launch>
std::vector<double> time_runs(cudaStream_t stream, int warmup, int repetitions, Launch launch) {
  for (int i = 0; i < warmup; ++i) launch(i);
  std::vector<cudaEvent_t> events(static_cast<std::size_t>(2 * repetitions));
  for (cudaEvent_t& e : events) check(cudaEventCreate(&e), "cudaEventCreate");
  for (int i = 0; i < repetitions; ++i) {
    check(cudaEventRecord(events[static_cast<std::size_t>(2 * i)], stream), "cudaEventRecord");
    launch(warmup + i);
    check(cudaEventRecord(events[static_cast<std::size_t>(2 * i + 1)], stream), "cudaEventRecord");
  }
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  check(cudaGetLastError(), "a timed launch");
  std::vector<double> seconds;
  for (int i = 0; i < repetitions; ++i) {
    float ms = 0;
    check(cudaEventElapsedTime(&ms, events[static_cast<std::size_t>(2 * i)], events[static_cast<std::size_t>(2 * i + 1)]), "cudaEventElapsedTime");
    seconds.push_back(static_cast<double>(ms) * 1e-3);
  }
  for (cudaEvent_t& e : events) cudaEventDestroy(e);
  std::sort(seconds.begin(), seconds.end());
  return seconds;
}

}  // namespace plumb::kernels
