#include "kernels/device_fill.hpp"

#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include "kernels/cuda_check.hpp"

namespace plumb::kernels {
namespace {

__device__ std::uint32_t mix(std::size_t i, std::uint32_t seed) {
  std::uint32_t x = static_cast<std::uint32_t>(i) * 2654435761u ^ seed;
  x ^= x >> 13;
  x *= 0x5bd1e995u;
  x ^= x >> 15;
  return x;
}

template <typename T>
__global__ void fill_values(T* p, std::size_t n, std::uint32_t seed) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    std::uint32_t x = mix(i, seed);
    float v = 0.25f + 0.5f * static_cast<float>(x & 0xffffu) / 65535.0f;
    p[i] = T((x & 0x10000u) ? v : -v);
  }
}

__global__ void fill_words(std::uint32_t* p, std::size_t n, std::uint32_t seed) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    p[i] = (static_cast<std::uint32_t>(i) * 2654435761u ^ seed) | 1u;
}

}  // namespace

void fill_nonzero(void* p, std::size_t elements, Element e, std::uint32_t seed, cudaStream_t stream) {
  switch (e) {
    case Element::bf16: fill_values<<<1024, 256, 0, stream>>>(static_cast<__nv_bfloat16*>(p), elements, seed); break;
    case Element::fp8_e4m3: fill_values<<<1024, 256, 0, stream>>>(static_cast<__nv_fp8_e4m3*>(p), elements, seed); break;
    case Element::word32: fill_words<<<1024, 256, 0, stream>>>(static_cast<std::uint32_t*>(p), elements, seed); break;
  }
  check(cudaGetLastError(), "fill_nonzero");
}

}  // namespace plumb::kernels
