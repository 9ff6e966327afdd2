#pragma once
// What every kernels/ benchmark needs: CUDA and cuBLAS status checks that throw with the error text,
// and an owned device buffer.
#include <cstddef>
#include <cuda_runtime.h>
#include <stdexcept>
#include <string>

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

}  // namespace plumb::kernels
