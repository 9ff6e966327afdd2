#pragma once
// Filling device buffers for timing and checking: values never zero (zeros can take fast paths in
// hardware and hide unwritten outputs), small enough that long dot products stay finite in bf16, and
// in e4m3's normal range.
#include <cstddef>
#include <cstdint>
#include <cuda_runtime.h>

namespace plumb::kernels {

enum class Element { bf16, fp8_e4m3, word32 };

// `elements` values of type `e` at `p`, ±[0.25, 0.75] (32-bit words: distinct odd integers), a
// deterministic function of (position, seed). Asynchronous on `stream`.
void fill_nonzero(void* p, std::size_t elements, Element e, std::uint32_t seed, cudaStream_t stream = nullptr);

}  // namespace plumb::kernels
