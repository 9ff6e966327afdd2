#include "kernels/gemm_bench.hpp"

#include "kernels/cuda_check.hpp"

#include <algorithm>
#include <cublasLt.h>
#include <memory>
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <stdexcept>
#include <string>
#include <vector>

namespace plumb::kernels {
namespace {

void check(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS) throw std::runtime_error(std::string(what) + ": cuBLAS status " + std::to_string(static_cast<int>(status)));
}

// Values in ±[0.25, 0.75]: never zero (zeros can take fast paths in hardware), small enough that
// long dot products stay finite in bf16, and in e4m3's normal range.
template <typename T>
__global__ void fill_nonzero(T* p, std::size_t n, std::uint32_t seed) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    std::uint32_t x = static_cast<std::uint32_t>(i) * 2654435761u ^ seed;
    x ^= x >> 13;
    x *= 0x5bd1e995u;
    x ^= x >> 15;
    float v = 0.25f + 0.5f * static_cast<float>(x & 0xffffu) / 65535.0f;
    p[i] = T((x & 0x10000u) ? v : -v);
  }
}

void fill(void* p, std::size_t elements, bool fp8, std::uint32_t seed) {
  if (fp8) fill_nonzero<<<1024, 256>>>(static_cast<__nv_fp8_e4m3*>(p), elements, seed);
  else fill_nonzero<<<1024, 256>>>(static_cast<__nv_bfloat16*>(p), elements, seed);
}

}  // namespace

int sm_clock_mhz() {
  int device = 0, khz = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  check(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, device), "cudaDeviceGetAttribute(clock)");
  return khz / 1000;
}

GemmTiming time_gemm(std::int64_t m, std::int64_t n, std::int64_t k, GemmInputs inputs, int warmup, int repetitions) {
  int device = 0, l2 = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  check(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device), "cudaDeviceGetAttribute(L2)");
  const bool fp8 = inputs == GemmInputs::fp8_e4m3;
  const std::size_t in_size = fp8 ? 1 : 2;  // bytes per input element; the output is bf16 either way
  const std::size_t a_bytes = static_cast<std::size_t>(m * k) * in_size, b_bytes = static_cast<std::size_t>(k * n) * in_size,
                    c_bytes = static_cast<std::size_t>(m * n) * 2, set = a_bytes + b_bytes + c_bytes;
  // Enough copies that one pass over them is twice L2: each repetition reads operands from HBM.
  const int sets = static_cast<int>(std::clamp<std::size_t>(2 * static_cast<std::size_t>(l2) / set + 1, 1, 64));
  std::vector<std::unique_ptr<DeviceBuffer>> a, b, c;
  for (int i = 0; i < sets; ++i) {
    a.push_back(std::make_unique<DeviceBuffer>(a_bytes));
    b.push_back(std::make_unique<DeviceBuffer>(b_bytes));
    c.push_back(std::make_unique<DeviceBuffer>(c_bytes));
    fill(a.back()->p, a_bytes / in_size, fp8, 17u + 2u * static_cast<std::uint32_t>(i));
    fill(b.back()->p, b_bytes / in_size, fp8, 18u + 2u * static_cast<std::uint32_t>(i));
  }
  check(cudaGetLastError(), "fill_nonzero");
  const std::size_t workspace_bytes = 32u << 20;  // cuBLAS's recommendation for Hopper
  DeviceBuffer workspace(workspace_bytes);

  cublasLtHandle_t lt = nullptr;
  check(cublasLtCreate(&lt), "cublasLtCreate");
  cublasLtMatmulDesc_t op = nullptr;
  check(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
  cublasOperation_t transa = CUBLAS_OP_T, transb = CUBLAS_OP_N;  // column-major C = Aᵀ·B: "TN"
  check(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &transa, sizeof transa), "set TRANSA");
  check(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &transb, sizeof transb), "set TRANSB");
  // fp8: one scale per input tensor (1, the inputs are already in range), read by the kernel from
  // device memory as in training, where the scales are computed on the GPU.
  DeviceBuffer scales(2 * sizeof(float));
  if (fp8) {
    const float ones[2] = {1.0f, 1.0f};
    check(cudaMemcpy(scales.p, ones, sizeof ones, cudaMemcpyHostToDevice), "cudaMemcpy(scales)");
    const float* a_scale = static_cast<const float*>(scales.p);
    const float* b_scale = a_scale + 1;
    check(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &a_scale, sizeof a_scale), "set A scale");
    check(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &b_scale, sizeof b_scale), "set B scale");
  }
  const cudaDataType_t in_type = fp8 ? CUDA_R_8F_E4M3 : CUDA_R_16BF;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  check(cublasLtMatrixLayoutCreate(&la, in_type, static_cast<std::uint64_t>(k), static_cast<std::uint64_t>(m), k), "layout A");
  check(cublasLtMatrixLayoutCreate(&lb, in_type, static_cast<std::uint64_t>(k), static_cast<std::uint64_t>(n), k), "layout B");
  check(cublasLtMatrixLayoutCreate(&lc, CUDA_R_16BF, static_cast<std::uint64_t>(m), static_cast<std::uint64_t>(n), m), "layout C");
  cublasLtMatmulPreference_t pref = nullptr;
  check(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
  check(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes, sizeof workspace_bytes),
        "set workspace");
  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  check(cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, lc, lc, pref, 1, &heuristic, &found), "cublasLtMatmulAlgoGetHeuristic");
  if (found == 0) throw std::runtime_error("cuBLASLt has no algorithm for this GEMM");

  const float alpha = 1.0f, beta = 0.0f;
  cudaStream_t stream = nullptr;
  check(cudaStreamCreate(&stream), "cudaStreamCreate");
  auto launch = [&](int i) {
    int s = i % sets;
    check(cublasLtMatmul(lt, op, &alpha, a[static_cast<std::size_t>(s)]->p, la, b[static_cast<std::size_t>(s)]->p, lb, &beta,
                         c[static_cast<std::size_t>(s)]->p, lc, c[static_cast<std::size_t>(s)]->p, lc, &heuristic.algo, workspace.p,
                         workspace_bytes, stream),
          "cublasLtMatmul");
  };
  std::vector<double> seconds = time_runs(stream, warmup, repetitions, launch);
  cudaStreamDestroy(stream);
  cublasLtMatmulPreferenceDestroy(pref);
  cublasLtMatrixLayoutDestroy(la);
  cublasLtMatrixLayoutDestroy(lb);
  cublasLtMatrixLayoutDestroy(lc);
  cublasLtMatmulDescDestroy(op);
  cublasLtDestroy(lt);
  GemmTiming t;
  t.median_seconds = seconds[seconds.size() / 2];
  t.min_seconds = seconds.front();
  t.repetitions = repetitions;
  return t;
}

}  // namespace plumb::kernels
