#pragma once
// One GEMM as the kernels run it: `batch` independent products C[m×n] = A[m×k]·B[k×n] over
// contiguous operands, bf16 or fp8 (e4m3) inputs, a bf16 output. Plain C++: the CPU side plans
// buffers with it.
#include <cstddef>
#include <cstdint>

namespace plumb::kernels {

struct GemmCall {
  std::int64_t m = 0, n = 0, k = 0, batch = 1;
  bool fp8 = false;
  std::size_t a_bytes() const { return static_cast<std::size_t>(m * k * batch) * (fp8 ? 1 : 2); }
  std::size_t b_bytes() const { return static_cast<std::size_t>(k * n * batch) * (fp8 ? 1 : 2); }
  std::size_t c_bytes() const { return static_cast<std::size_t>(m * n * batch) * 2; }
};

}  // namespace plumb::kernels
