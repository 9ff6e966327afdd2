#pragma once
// GEMMs through cuBLASLt as training frameworks run them: bf16 inputs, or fp8 e4m3 inputs with
// per-tensor scales, a bf16 output, fp32 accumulation, the "TN" layout a Linear layer's weight is
// stored in, and `batch` independent products over contiguous operands (local experts, attention
// heads). One runner per stream: its workspace must not be shared by GEMMs running at once.
#include <cstddef>
#include <cstdint>
#include <cuda_runtime.h>
#include <map>
#include <memory>
#include <tuple>

#include "kernels/gemm_call.hpp"

namespace plumb::kernels {


class GemmRunner {
 public:
  GemmRunner();
  ~GemmRunner();
  GemmRunner(const GemmRunner&) = delete;
  GemmRunner& operator=(const GemmRunner&) = delete;

  // C[m×n] = A[m×k]·B[k×n] for each of `batch` operand sets laid end to end; asynchronous on
  // `stream`. Throws std::runtime_error with the cuBLAS status when no algorithm fits (fp8 on a GPU
  // without fp8 included).
  void run(const GemmCall& g, const void* a, const void* b, void* c, cudaStream_t stream);

 private:
  struct Plan;
  using Key = std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t, bool>;
  Plan& plan(const GemmCall& g);
  void* lt_ = nullptr;  // cublasLtHandle_t
  void* workspace_ = nullptr;
  void* scales_ = nullptr;  // two device floats, 1.0, 256 bytes apart: the fp8 per-tensor scales
  std::map<Key, std::unique_ptr<Plan>> plans_;
};

}  // namespace plumb::kernels
